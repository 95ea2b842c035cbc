// The CPU's DeviceKernels::fixed_order_gemm (device_kernels.h, matmul.h): every output element an
// exactly specified sum, so its bits are the same whatever the call's shape, the blocking, the
// thread count or the vector width. Per leaf of the inner dim, a chain of fused multiply-adds
// from 0 in k order (std::fma, or an FMA instruction: both round once); the leaves' chains are
// then added in tree_order.h's tree. Register blocks of R rows x NV vectors (AVX-512 or AVX2 + FMA,
// chosen at run time) and scalar code for the edges compute the same values.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "globe/core/deterministic.h"
#include "globe/kernels/cpu/blas.h"
#include "globe/kernels/cpu/matmul.h"
#include "globe/kernels/cpu/tiled_transpose.h"
#include "globe/kernels/tree_order.h"
#include "globe/kernels/cpu/worker_pool.h"

namespace globe::kernels {

namespace {

// tree_order.h's tree over an element's (or a register block's) leaves, as the loops below run
// it: step t computes leaf `leaf` in registers, adds it to the `merges` slots below `slot`
// (slot - 1 first, each the left sibling it completes: slot s becomes slot s plus the running
// value), and stores the result in slot - merges. These are tree_walk's additions in tree_walk's
// order, with each right-hand operand kept in registers rather than stored and reloaded; at most
// one slot per tree level is stored, and the last step's result is the sum.
struct LeafStep {
  int64_t leaf;
  int slot, merges;
};

std::vector<LeafStep> leaf_steps(int64_t leaves) {
  std::vector<LeafStep> steps;
  auto piece = [&](int64_t l, int s) { steps.push_back({globe::detail::leaf_in_test_order(l, leaves), s, 0}); };
  auto add = [&](int s) {
    LeafStep& last = steps.back();
    GLOBE_CHECK(s == last.slot - last.merges - 1, "[matmul] fixed-order product: tree step out of order");
    ++last.merges;
  };
  tree_walk(0, leaves, 0, piece, add);
  return steps;
}

// The operands of one call: c [n, m] = a [n, k] b [k, m] (+ bias [m]), leaves of `leaf` along k.
// a's element (i, q) is at a[i * lda + q * acs] (any strides); b's rows are ldb apart, its
// columns adjacent; bias, where not null, is added to each finished sum.
template <class T>
struct Gemm {
  int64_t n, m, k, leaf;
  const std::vector<LeafStep>* steps;  // leaf_steps(k / leaf)
  const T* a;
  int64_t lda, acs;
  const T* b;
  int64_t ldb;
  T* c;
  int64_t ldc;
  const T* bias;
};

// A finished sum as stored: plus the column's bias where there is one (no bias adds nothing:
// adding 0 would turn -0 into +0).
template <class T>
T finished(const Gemm<T>& g, T sum, int64_t j) {
  return g.bias ? sum + g.bias[j] : sum;
}

// One element the plain way (the edges of the register blocks, and CPUs without FMA vectors).
template <class T>
T element(const Gemm<T>& g, int64_t i, int64_t j, T* slots) {
  T acc = 0;
  for (const LeafStep& st : *g.steps) {
    acc = 0;
    for (int64_t q = st.leaf * g.leaf; q < (st.leaf + 1) * g.leaf; ++q)
      acc = std::fma(g.a[i * g.lda + q * g.acs], g.b[q * g.ldb + j], acc);
    for (int d = 1; d <= st.merges; ++d) acc = slots[st.slot - d] + acc;
    slots[st.slot - st.merges] = acc;
  }
  return finished(g, acc, j);
}

// The register blocks, once per vector ISA: each region is compiled for its target, and
// fixed_order_block.inc (block, strips) is compiled in each, on that region's vectors.
#define GLOBE_VEC(NAME, T, V, LANES, SET0, SET1, LOAD, STORE, ADD, FMA)      \
  struct NAME {                                                            \
    using type = V;                                                        \
    static constexpr int lanes = LANES;                                    \
    static V zero() { return SET0(); }                                     \
    static V splat(T x) { return SET1(x); }                                \
    static V load(const T* p) { return LOAD(p); }                          \
    static void store(T* p, V v) { STORE(p, v); }                          \
    static V add(V a, V b) { return ADD(a, b); }                           \
    static V fma(V a, V b, V c) { return FMA(a, b, c); }                   \
  };

#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {
GLOBE_VEC(F, float, __m512, 16, _mm512_setzero_ps, _mm512_set1_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_add_ps,
          _mm512_fmadd_ps)
GLOBE_VEC(D, double, __m512d, 8, _mm512_setzero_pd, _mm512_set1_pd, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_add_pd,
          _mm512_fmadd_pd)
#include "globe/kernels/cpu/fixed_order_block.inc"
template <class T>
void run_strips(const Gemm<T>& g, int64_t j0, int64_t j1) {
  if constexpr (std::is_same_v<T, float>) strips<T, F, 8, 2>(g, j0, j1);
  else strips<T, D, 8, 2>(g, j0, j1);
}
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
GLOBE_VEC(F, float, __m256, 8, _mm256_setzero_ps, _mm256_set1_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps,
          _mm256_fmadd_ps)
GLOBE_VEC(D, double, __m256d, 4, _mm256_setzero_pd, _mm256_set1_pd, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_add_pd,
          _mm256_fmadd_pd)
#include "globe/kernels/cpu/fixed_order_block.inc"
template <class T>
void run_strips(const Gemm<T>& g, int64_t j0, int64_t j1) {
  if constexpr (std::is_same_v<T, float>) strips<T, F, 6, 2>(g, j0, j1);
  else strips<T, D, 6, 2>(g, j0, j1);
}

// The panel of a transposed b (element (q, j) at s[j * s_col + q]): d[q * w + j] for q < k, j < w,
// in 8 x 8 tiles, each 8 loads of 8 consecutive q, transposed in registers, 8 stores (a quarter of
// the scalar copy's time); copy_tiled at the edges. A copy: the product's bits do not change.
void pack_transposed(float* d, int64_t w, const float* s, int64_t s_col, int64_t k) {
  const int64_t k8 = k / 8 * 8, w8 = w / 8 * 8;
  for (int64_t j = 0; j < w8; j += 8)
    for (int64_t q = 0; q < k8; q += 8) {
      __m256 r[8], t[8];
      for (int x = 0; x < 8; ++x) r[x] = _mm256_loadu_ps(s + (j + x) * s_col + q);
      for (int x = 0; x < 8; x += 2) {
        t[x] = _mm256_unpacklo_ps(r[x], r[x + 1]);
        t[x + 1] = _mm256_unpackhi_ps(r[x], r[x + 1]);
      }
      for (int x = 0; x < 8; x += 4) {
        r[x] = _mm256_shuffle_ps(t[x], t[x + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[x + 1] = _mm256_shuffle_ps(t[x], t[x + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[x + 2] = _mm256_shuffle_ps(t[x + 1], t[x + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[x + 3] = _mm256_shuffle_ps(t[x + 1], t[x + 3], _MM_SHUFFLE(3, 2, 3, 2));
      }
      for (int x = 0; x < 4; ++x) {
        _mm256_storeu_ps(d + (q + x) * w + j, _mm256_permute2f128_ps(r[x], r[x + 4], 0x20));
        _mm256_storeu_ps(d + (q + x + 4) * w + j, _mm256_permute2f128_ps(r[x], r[x + 4], 0x31));
      }
    }
  copy_tiled(d + w8, w, s + w8 * s_col, 1, s_col, k, w - w8);
  copy_tiled(d + k8 * w, w, s + k8, 1, s_col, k - k8, w8);
}
}  // namespace avx2
#pragma GCC pop_options
#undef GLOBE_VEC

template <class T>
void plain(const Gemm<T>& g, int64_t j0, int64_t j1) {
  std::vector<T> slots(size_t(tree_slots(g.k / g.leaf)));
  for (int64_t i = 0; i < g.n; ++i)
    for (int64_t j = j0; j < j1; ++j) g.c[i * g.ldc + j] = element(g, i, j, slots.data());
}

// The code paths by the ISA they need ("plain": any CPU), best first.
enum class Code { avx512, avx2, plain };

bool cpu_runs(Code c) {
  __builtin_cpu_init();
  if (c == Code::avx512) return __builtin_cpu_supports("avx512f");
  if (c == Code::avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return true;
}

std::atomic<int> forced{-1};  // detail::use_fixed_order_code_for_test's choice, or -1

// Which code runs the strips: the best this CPU runs (any choice gives the same bits).
template <class T>
void (*strip_code())(const Gemm<T>&, int64_t, int64_t) {
  static const Code best = cpu_runs(Code::avx512) ? Code::avx512 : cpu_runs(Code::avx2) ? Code::avx2 : Code::plain;
  const int f = forced.load(std::memory_order_relaxed);
  switch (f < 0 ? best : Code(f)) {
    case Code::avx512: return avx512::run_strips<T>;
    case Code::avx2: return avx2::run_strips<T>;
    default: return plain<T>;
  }
}

// A strip's panel from a b whose columns are not adjacent: d[q * w + j] = s[q * s_row + j * s_col].
// float32 b stored transposed (s_row 1) goes through AVX2 8 x 8 transposes where the CPU has them.
template <class T>
void pack_transposed_panel(T* d, int64_t w, const T* s, int64_t s_row, int64_t s_col, int64_t k) {
  static const bool vector_packing = cpu_runs(Code::avx2);
  if constexpr (std::is_same_v<T, float>)
    if (s_row == 1 && vector_packing) return avx2::pack_transposed(d, w, s, s_col, k);
  copy_tiled(d, w, s, s_row, s_col, k, w);
}

// Below this many multiply-adds, one thread does it all.
constexpr int64_t kThreadedWork = int64_t(1) << 22;

template <class T>
void run(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, int64_t leaf) {
  const auto code = strip_code<T>();
  const int64_t entries = out.shape()[0], n = out.shape()[1], m = out.shape()[2], k = a.shape()[2];
  const T* pa = static_cast<const T*>(a.storage()->data) + a.offset();
  const T* pb = static_cast<const T*>(b.storage()->data) + b.offset();
  T* pc = static_cast<T*>(out.storage()->data) + out.offset();
  const T* pbias = bias.defined() ? static_cast<const T*>(bias.storage()->data) + bias.offset() : nullptr;
  const std::vector<LeafStep> steps = leaf_steps(k / leaf);
  // Work items: (entry, strip of 64 columns); any split gives the same bits.
  constexpr int64_t kStrip = 64;
  const int64_t strips_per_entry = (m + kStrip - 1) / kStrip, count = entries * strips_per_entry;
  // Each strip's block of b is copied into a contiguous panel first: read in place, its rows
  // (often a power of two of bytes apart) fall into the same few L1 sets and evict each other,
  // and a transposed b has no adjacent columns to load. a is read where it lies.
  auto item = [&](int64_t t, std::vector<T>& panel) {
    const int64_t e = t / strips_per_entry, j0 = t % strips_per_entry * kStrip, w = std::min(m, j0 + kStrip) - j0;
    Gemm<T> g{n, m, k, leaf, &steps, pa + e * a.strides()[0], a.strides()[1], a.strides()[2], pb + e * b.strides()[0],
              b.strides()[1], pc + e * n * m, m, pbias ? pbias + j0 : nullptr};
    const int64_t bcs = b.strides()[2];
    panel.resize(size_t(k * w));
    if (bcs == 1) {
      for (int64_t q = 0; q < k; ++q) std::copy_n(g.b + q * g.ldb + j0, w, panel.data() + q * w);
    } else {
      pack_transposed_panel(panel.data(), w, g.b + j0 * bcs, g.ldb, bcs, k);
    }
    g.b = panel.data();
    g.ldb = w;
    g.c += j0;
    code(g, 0, w);
  };
  const int64_t threads = std::min<int64_t>(std::max(1, openblas_get_num_threads()), count);
  if (threads <= 1 || entries * n * m * k < kThreadedWork) {
    std::vector<T> panel;
    for (int64_t t = 0; t < count; ++t) item(t, panel);
    return;
  }
  std::atomic<int64_t> next{0};
  run_on_threads(int(threads), [&] {
    std::vector<T> panel;
    for (int64_t t; (t = next.fetch_add(1)) < count;) item(t, panel);
  });
}

}  // namespace

bool detail::use_fixed_order_code_for_test(const char* name) {
  const std::string n = name ? name : "";
  if (n.empty()) return forced = -1, true;
  for (Code c : {Code::avx512, Code::avx2, Code::plain})
    if (n == (c == Code::avx512 ? "avx512" : c == Code::avx2 ? "avx2" : "plain")) {
      if (!cpu_runs(c)) return false;
      forced = int(c);
      return true;
    }
  return false;
}

void fixed_order_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, int64_t leaf) {
  GLOBE_CHECK(leaf > 0 && a.shape()[2] % leaf == 0,
              "[matmul] fixed-order product: inner length ", a.shape()[2], " is not whole leaves of ", leaf);
  switch (a.dtype()) {
    case DType::float32: return run<float>(out, a, b, bias, leaf);
    case DType::float64: return run<double>(out, a, b, bias, leaf);
    default: GLOBE_FAIL("[matmul] fixed-order product takes float32 or float64, got ", dtype_name(a.dtype()));
  }
}

}  // namespace globe::kernels
