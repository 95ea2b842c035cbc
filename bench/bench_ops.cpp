// Op-level costs on one thread:
//   * matmul 1024x1024x1024 float32 through globe::matmul vs raw cblas_sgemm on the same input
//     buffers, interleaved, median of --reps runs each after --warmup runs (GFLOP/s and the ratio);
//   * Linear with bias, forward and forward + backward: the one op (bias added in the GEMM's output
//     pass) against matmul_nt then add, at GPT's MLP shape and at bench_mlp's;
//   * dispatch cost of tiny ops (add of two 16-element tensors, 16x16 matmul), with and without
//     requires_grad (ns per op, median over --reps batches of --iters calls).
//   build/bin/bench_ops [--n 1024] [--reps 15] [--warmup 10] [--iters 100000] [--threads 1]
// Prints a human line and a "RESULT {json}" line per measurement.
// The raw sgemm writes into one preallocated buffer; globe::matmul allocates (and zero-fills) its
// output on every call, as any op does.
#include <cblas.h>

#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_common.h"
#include "globe/globe.h"

using namespace globe;

namespace {

volatile float g_sink;  // keeps results alive

void bench_matmul(int64_t n, int reps, int warmup, int threads) {
  manual_seed(7);
  const Tensor a = randn({n, n}), b = randn({n, n});
  std::vector<float> c(size_t(n * n));
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  auto raw = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, pa, int(n), pb, int(n),
                0.0f, c.data(), int(n));
    g_sink = c[0];
  };
  auto ours = [&] {
    Tensor out = matmul(a, b);
    g_sink = out.data<float>()[0];
  };
  // Warm up both. A fresh output buffer runs ~8% slower for its first few uses (measured with a
  // plain aligned_alloc'd buffer too, not only globe's), so short runs would mostly time that.
  for (int i = 0; i < warmup; ++i) {
    raw();
    ours();
  }
  std::vector<double> t_raw, t_ours;
  // Interleaved, alternating which goes first, so neither side always runs in the other's wake
  // (caches, the allocator's state).
  auto timed = [](auto& fn, std::vector<double>& out) {
    const double t0 = bench::now_s();
    fn();
    out.push_back(bench::now_s() - t0);
  };
  for (int r = 0; r < reps; ++r) {
    if (r % 2 == 0) {
      timed(raw, t_raw);
      timed(ours, t_ours);
    } else {
      timed(ours, t_ours);
      timed(raw, t_raw);
    }
  }
  // Same values from both paths.
  const Tensor check = matmul(a, b);
  raw();
  double maxdiff = 0;
  const float* pc = check.data<float>();
  for (int64_t i = 0; i < n * n; ++i) maxdiff = std::max(maxdiff, double(std::fabs(pc[i] - c[size_t(i)])));

  const double flop = 2.0 * double(n) * double(n) * double(n);
  const double g_raw = flop / bench::median(t_raw) / 1e9, g_ours = flop / bench::median(t_ours) / 1e9;
  nlohmann::json res = {{"bench", "matmul"}, {"n", n}, {"threads", threads}, {"reps", reps}, {"warmup", warmup},
                        {"sgemm_gflops_median", g_raw}, {"globe_gflops_median", g_ours},
                        {"ratio_globe_over_sgemm", g_ours / g_raw}, {"sgemm_ms_median", 1e3 * bench::median(t_raw)},
                        {"globe_ms_median", 1e3 * bench::median(t_ours)}, {"max_abs_diff", maxdiff}};
  std::printf("matmul %lldx%lldx%lld, %d thread(s): globe %.1f GFLOP/s, raw sgemm %.1f GFLOP/s, ratio %.3f "
              "(max |diff| %g)\n",
              (long long)n, (long long)n, (long long)n, threads, g_ours, g_raw, g_ours / g_raw, maxdiff);
  std::printf("RESULT %s\n", bench::result(res).c_str());
}

// Linear at x [rows, in], weight [out, in], bias [out]: linear() (one op) against the same sum
// written as two (matmul_nt, then add), the forward alone and forward + backward, interleaved,
// median of `reps` each. The backward starts from sum(y * dy), the same two ops on both sides.
void bench_linear(int64_t rows, int64_t in, int64_t out, int reps, int warmup) {
  manual_seed(8);
  Tensor x = randn({rows, in}), w = randn({out, in}) * 0.05, b = randn({out});
  for (Tensor* t : {&x, &w, &b}) t->set_requires_grad(true);
  const Tensor dy = randn({rows, out});
  auto step = [&](bool fused, bool backward) {
    for (Tensor* t : {&x, &w, &b}) t->set_grad(Tensor());
    std::optional<NoGradGuard> no_grad;
    if (!backward) no_grad.emplace();
    const Tensor y = fused ? linear(x, w, b) : add(matmul_nt(x, w), b);
    if (backward) sum(y * dy).backward();
    g_sink = y.data<float>()[0];
    return y;
  };
  nlohmann::json res = {{"bench", "linear_bias"}, {"rows", rows}, {"in", in}, {"out", out}, {"reps", reps}};
  std::printf("linear+bias [%lld, %lld] -> %lld, one op vs matmul_nt + add:", (long long)rows, (long long)in,
              (long long)out);
  for (bool backward : {false, true}) {
    for (int i = 0; i < warmup; ++i) {
      step(true, backward);
      step(false, backward);
    }
    std::vector<double> t_fused, t_two;
    for (int r = 0; r < reps; ++r) {
      for (bool fused : {r % 2 == 0, r % 2 != 0}) {
        const double t0 = bench::now_s();
        step(fused, backward);
        (fused ? t_fused : t_two).push_back(bench::now_s() - t0);
      }
    }
    const double fused_ms = 1e3 * bench::median(t_fused), two_ms = 1e3 * bench::median(t_two);
    const std::string key = backward ? "fwd_bwd" : "fwd";
    res[key + "_fused_ms_median"] = fused_ms;
    res[key + "_two_ops_ms_median"] = two_ms;
    res[key + "_speedup_fused"] = two_ms / fused_ms;
    std::printf(" %s %.3f / %.3f ms (%.3fx)", backward ? "fwd+bwd" : "fwd", fused_ms, two_ms, two_ms / fused_ms);
  }
  // Same values both ways (the sum's order differs, so not bit for bit).
  const auto y1 = step(true, true).to_vector<float>(), gb1 = b.grad().to_vector<float>();
  const auto y2 = step(false, true).to_vector<float>(), gb2 = b.grad().to_vector<float>();
  double maxdiff = 0;
  for (size_t i = 0; i < y1.size(); ++i) maxdiff = std::max(maxdiff, double(std::fabs(y1[i] - y2[i])));
  for (size_t i = 0; i < gb1.size(); ++i) maxdiff = std::max(maxdiff, double(std::fabs(gb1[i] - gb2[i])));
  res["max_abs_diff"] = maxdiff;
  std::printf(" (max |diff| %g)\nRESULT %s\n", maxdiff, bench::result(res).c_str());
}

// Median ns per call of fn over `reps` batches of `iters` calls.
template <class Fn>
double ns_per_op(Fn&& fn, int reps, int iters) {
  for (int i = 0; i < iters / 10; ++i) fn();
  std::vector<double> per;
  for (int r = 0; r < reps; ++r) {
    const double t0 = bench::now_s();
    for (int i = 0; i < iters; ++i) fn();
    per.push_back((bench::now_s() - t0) / iters * 1e9);
  }
  return bench::median(per);
}

void bench_tiny(const char* name, const Shape& sa, const Shape& sb, bool is_matmul, int reps, int iters) {
  nlohmann::json res = {{"bench", name}, {"shape_a", sa}, {"shape_b", sb}, {"iters", iters}, {"reps", reps}};
  std::printf("%s %s x %s:", name, shape_str(sa).c_str(), shape_str(sb).c_str());
  for (bool grad : {false, true}) {
    Tensor a = randn(sa), b = randn(sb);
    if (grad) {
      a.set_requires_grad(true);
      b.set_requires_grad(true);
    }
    const double ns = ns_per_op(
        [&] {
          Tensor c = is_matmul ? matmul(a, b) : add(a, b);
          g_sink = c.data<float>()[0];
        },
        reps, iters);
    res[grad ? "ns_per_op_requires_grad" : "ns_per_op_no_grad"] = ns;
    std::printf(" %s %.0f ns/op", grad ? "requires_grad" : "no grad", ns);
  }
  std::printf("\nRESULT %s\n", bench::result(res).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bench::Flags f(argc, argv, "bench_ops: matmul against raw cblas_sgemm, linear with bias, and the per-call cost of tiny ops",
                 {{"n", "1024", "matmul size (n x n times n x n)"},
                  {"reps", "15", "timed repetitions (the median counts)"},
                  {"warmup", "10", "untimed repetitions first"},
                  {"iters", "100000", "calls per repetition of the tiny ops"},
                  {"threads", "1", "BLAS threads per process"}});
  const int threads = int(f["threads"]);
  bench::set_threads(threads);
  bench_matmul(f["n"], int(f["reps"]), int(f["warmup"]), threads);
  bench_linear(1024, 128, 512, 4 * int(f["reps"]), int(f["warmup"]));  // GPT's c_fc (16 x 64 tokens)
  bench_linear(64, 1024, 1024, 4 * int(f["reps"]), int(f["warmup"]));  // bench_mlp's layer
  bench_tiny("tiny_add", {16}, {16}, false, int(f["reps"]), int(f["iters"]));
  bench_tiny("tiny_matmul", {16, 16}, {16, 16}, true, int(f["reps"]), int(f["iters"]) / 4);
  return 0;
}
