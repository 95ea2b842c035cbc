// Pipeline benchmarks (bench/run_pipeline.sh runs every case; figures in bench/RESULTS.md).
//   --case fidelity    stages whose forward and backward are timed sleeps (t_F = 20 ms, t_B = 40
//                      ms, split 20 + 20 into input and weight gradient), one stage per rank:
//                      step time and bubble against the schedule's theory. Independent of cores.
//   --case memory      p = 2, m = 8: peak activation bytes on stage 0 under gpipe and 1f1b, and on
//                      the rank holding the most under 1f1b and zb-h1.
//   --case throughput  an MLP, m = 8: with 2+ ranks a pipeline of one stage per rank (1f1b) against
//                      the same stages taking turns, alternated step by step (over_in_turn); with
//                      1 rank the same model without pipelining (gradient accumulation over the
//                      same micro-batches). run_pipeline.sh also divides the 2-rank and 1-rank steps/s.
//   --case eager       the plain form (to_global between stages, one backward per micro-batch) on
//                      sleep stages: its step against GPipe's theory and against taking turns.
// Each prints one `RESULT {json}` line per measurement (rank 0).
#include <globe/globe.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "bench_common.h"
#include "globe/ops/op.h"

namespace pp = globe::pipeline;
using globe::Tensor;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
void sleep_ms(double ms) { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); }

// A copy that takes `ms` to compute (only ranks holding the tensor compute, so only they sleep).
class SleepCopy final : public globe::Op {
 public:
  explicit SleepCopy(double ms) : ms_(ms) {}
  std::string name() const override { return "sleep_copy"; }
  bool differentiable() const override { return false; }
  globe::TensorMeta infer(const std::vector<globe::TensorMeta>& in) const override { return in[0]; }
  Tensor compute(const std::vector<Tensor>& in, const globe::ComputeArgs&) const override {
    sleep_ms(ms_);
    return globe::contiguous(in[0]);
  }

 private:
  double ms_;
};

// y = x (the weight w only carries the gradient); forward sleeps t_F, the input gradient t_I, the
// weight gradient t_W.
class SleepOp final : public globe::Op {
 public:
  SleepOp(double f, double i, double w) : f_(f), i_(i), w_(w) {}
  std::string name() const override { return "sleep"; }
  globe::TensorMeta infer(const std::vector<globe::TensorMeta>& in) const override { return in[0]; }
  Tensor compute(const std::vector<Tensor>& in, const globe::ComputeArgs&) const override {
    sleep_ms(f_);
    return globe::contiguous(in[0]);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>& needs) const override {
    std::vector<Tensor> out(2);
    if (needs[0]) out[0] = globe::apply_op<SleepCopy>({g}, i_);
    if (needs[1]) out[1] = globe::apply_op<SleepCopy>({globe::zeros_like(in[1])}, w_);
    return out;
  }

 private:
  double f_, i_, w_;
};

struct SleepStage : globe::nn::UnaryModule {
  Tensor w = globe::zeros({1});
  double f, i, wt;
  SleepStage(double f_, double i_, double w_) : f(f_), i(i_), wt(w_) { register_parameter("w", w); }
  Tensor forward(const Tensor& x) override { return globe::apply_op<SleepOp>({x, w}, f, i, wt); }
};

std::vector<globe::Placement> one_rank_groups() {
  std::vector<globe::Placement> g;
  for (int r = 0; r < globe::dist::world_size(); ++r) g.push_back(globe::placement("cpu", {r}));
  return g;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A per-rank figure from every rank (collective).
std::vector<double> over_ranks(double v) {
  Tensor t = globe::full({1}, v, globe::kFloat64).to_global(globe::Placement::all(), globe::sbp::split(0));
  return t.to_vector<double>();
}
double mean_over_ranks(double v) {
  const auto all = over_ranks(v);
  double s = 0;
  for (double x : all) s += x;
  return s / double(all.size());
}

void fidelity(const std::string& schedule, int steps) {
  const int p = globe::dist::world_size(), m = 8;
  const int v = schedule == "interleaved" || schedule == "zbv" ? 2 : 1;
  const double tf = 20, tb = 40, ti = 20, tw = 20;
  std::vector<std::shared_ptr<SleepStage>> stages;
  std::vector<globe::nn::UnaryModule*> blocks;
  for (int s = 0; s < p * v; ++s) {
    stages.push_back(std::make_shared<SleepStage>(tf / v, ti / v, tw / v));
    blocks.push_back(stages.back().get());
  }
  pp::Pipeline pipe(one_rank_groups(), blocks, {.schedule = schedule, .microbatches = m, .chunks = v});
  // The input requires grad so that stage 0's backward computes its input gradient too: every
  // stage's backward is then t_B.
  Tensor x = globe::zeros({m, 4}), y = globe::zeros({m, 4});
  x.set_requires_grad(true);
  std::vector<double> times, bubbles;
  for (int i = 0; i < steps + 1; ++i) {
    pp::StepResult r = pipe.step(x, y, globe::mse_loss);
    if (i == 0) continue;  // warm-up: communicators, first allocations
    times.push_back(r.step_seconds * 1e3);
    bubbles.push_back(1.0 - r.busy_seconds / r.step_seconds);
    if (std::getenv("BENCH_DEBUG")) std::fprintf(stderr, "rank %d busy %.1f step %.1f\n", globe::dist::world_rank(), r.busy_seconds * 1e3, r.step_seconds * 1e3);
  }
  const double step_ms = mean_over_ranks(median(times));
  const double bubble = mean_over_ranks(median(bubbles));
  // Theory: GPipe / 1F1B (m + p - 1)(t_F + t_B); interleaved (m + (p - 1)/v)(t_F + t_B); ZB-H1
  // m(t_F + t_B) + (p - 1)(t_F + t_I - t_W) (Qi et al. 2023); ZBV, which has no closed form here,
  // its own simulation: each group's work over one minus the simulated bubble (its unit times are
  // these chunks' times, t / 2 each).
  double theory = (m + p - 1) * (tf + tb);
  if (schedule == "interleaved") theory = (m + double(p - 1) / v) * (tf + tb);
  if (schedule == "zb-h1") theory = m * (tf + tb) + (p - 1) * (tf + ti - tw);
  if (schedule == "zbv") theory = m * (tf + tb) / (1.0 - pipe.schedule().simulated_bubble());
  const double theory_bubble = 1.0 - m * (tf + tb) / theory;
  if (globe::dist::world_rank() == 0)
    std::printf(
        "RESULT {\"case\": \"fidelity\", \"schedule\": \"%s\", \"stages\": %d, \"microbatches\": %d, \"step_ms\": %.1f, "
        "\"theory_ms\": %.1f, \"bubble\": %.4f, \"theory_bubble\": %.4f, \"simulated_bubble\": %.4f, \"machine\": %s}\n",
        schedule.c_str(), p * v, m, step_ms, theory, bubble, theory_bubble, pipe.schedule().simulated_bubble(),
        bench::machine().dump().c_str());
}

// The plain form, no pipeline object: one sleep stage per rank on its own placement, a loop over
// micro-batches with to_global between stages and one backward() each. Overlapped in GPipe order
// the step takes (m + p - 1)(t_F + t_B); stages merely taking turns would take m p (t_F + t_B).
void eager(int steps) {
  const int p = globe::dist::world_size(), m = 8;
  const double tf = 20, tb = 40;
  std::vector<globe::Placement> groups = one_rank_groups();
  std::vector<std::shared_ptr<SleepStage>> stages;
  std::vector<Tensor> params;
  for (int s = 0; s < p; ++s) {
    stages.push_back(std::make_shared<SleepStage>(tf, tb / 2, tb / 2));
    stages.back()->to_global(groups[size_t(s)], globe::sbp::broadcast);
    params.push_back(stages.back()->w);
  }
  globe::optim::SGD sgd(params, {.lr = 0.0});
  Tensor x = globe::zeros({m, 4}, groups[0], globe::sbp::broadcast);
  x.set_requires_grad(true);
  Tensor y = globe::zeros({m, 4}, groups.back(), globe::sbp::broadcast);
  std::vector<double> times;
  for (int i = 0; i < steps + 1; ++i) {
    const auto t = Clock::now();
    for (int k = 0; k < m; ++k) {
      Tensor h = globe::narrow(x, 0, k, 1);
      for (int s = 0; s < p; ++s) {
        if (s > 0) h = h.to_global(groups[size_t(s)]);
        h = stages[size_t(s)]->forward(h);
      }
      globe::mse_loss(h, globe::narrow(y, 0, k, 1)).backward();
    }
    sgd.step();  // reads the gradients: the paused backward passes finish here
    sgd.zero_grad();
    if (i > 0) times.push_back(ms_since(t));
  }
  const double step_ms = mean_over_ranks(median(times));
  if (globe::dist::world_rank() == 0)
    std::printf("RESULT {\"case\": \"eager\", \"stages\": %d, \"microbatches\": %d, \"step_ms\": %.1f, "
                "\"gpipe_theory_ms\": %.1f, \"in_turn_ms\": %.1f, \"machine\": %s}\n",
                p, m, step_ms, (m + p - 1) * (tf + tb), double(m) * p * (tf + tb), bench::machine().dump().c_str());
}

// An MLP of `layers` blocks Linear(h, h) + ReLU.
struct Mlp {
  std::vector<std::shared_ptr<globe::nn::UnaryModule>> layers;
  Mlp(int n, int64_t h) {
    globe::manual_seed(0);
    for (int i = 0; i < n; ++i)
      layers.push_back(std::make_shared<globe::nn::Sequential>(std::make_shared<globe::nn::Linear>(h, h),
                                                                std::make_shared<globe::nn::ReLU>()));
  }
  std::vector<globe::nn::UnaryModule*> blocks() {
    std::vector<globe::nn::UnaryModule*> b;
    for (auto& l : layers) b.push_back(l.get());
    return b;
  }
};

// Peak activation bytes under each schedule: stage 0's (GPipe against 1F1B: theory p/m), and the
// most any rank holds (ZB-H1 against 1F1B: the same bound, p micro-batches).
void memory() {
  const int m = 8;
  const int64_t h = 256, rows = 512 * m;
  std::map<std::string, double> stage0, most;
  std::map<std::string, int> alive0;
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"}) {
    Mlp mlp(8, h);
    pp::Pipeline pipe(one_rank_groups(), mlp.blocks(), {.schedule = schedule, .microbatches = m});
    globe::manual_seed(1);
    // The batch lives on the first stage and the targets on the last before the step: data, not
    // activations.
    Tensor x = globe::from_full(globe::randn({rows, h}), pipe.placement_of(0), globe::sbp::broadcast);
    Tensor y = globe::from_full(globe::randn({rows, h}), pipe.placement_of(pipe.stages() - 1), globe::sbp::broadcast);
    pipe.step(x, y, globe::mse_loss);  // warm-up: gradients exist from now on
    const int64_t before = globe::memory_stats().current_bytes;
    globe::reset_peak_memory();
    pp::StepResult r = pipe.step(x, y, globe::mse_loss);
    const double peak = double(globe::memory_stats().peak_bytes - before);
    const std::vector<double> peaks = over_ranks(peak);
    stage0[schedule] = peaks[0];
    most[schedule] = *std::max_element(peaks.begin(), peaks.end());
    alive0[schedule] = r.peak_alive[0];
  }
  if (globe::dist::world_rank() == 0)
    std::printf("RESULT {\"case\": \"memory\", \"stages\": %d, \"microbatches\": %d, \"gpipe_bytes\": %.0f, "
                "\"onef1b_bytes\": %.0f, \"ratio\": %.4f, \"theory\": %.4f, \"peak_alive_gpipe\": %d, "
                "\"peak_alive_1f1b\": %d, \"onef1b_most_bytes\": %.0f, \"zbh1_most_bytes\": %.0f, "
                "\"zbh1_over_1f1b\": %.4f, \"machine\": %s}\n",
                globe::dist::world_size(), m, stage0["gpipe"], stage0["1f1b"], stage0["1f1b"] / stage0["gpipe"],
                double(globe::dist::world_size()) / m, alive0["gpipe"], alive0["1f1b"], most["1f1b"], most["zb-h1"],
                most["zb-h1"] / most["1f1b"], bench::machine().dump().c_str());
}

// Throughput of a real model. With 2+ ranks (one stage each) two forms alternate step by step on
// the same stages, so both see the same cores, caches and memory per rank: the 1F1B pipeline over
// m micro-batches, and the stages taking turns (each micro-batch through every stage's forward and
// backward before the next starts: a one-micro-batch step, m times). Their ratio is what the
// schedule's overlap buys, theory p m / (m + p - 1). With 1 rank: the whole model unpipelined
// (gradient accumulation over the same micro-batches), the old baseline, which also changes the
// memory each rank touches (all layers' weights and gradients instead of 1/p of them).
void throughput(int steps) {
  const int m = 8, layers = 8;
  const int64_t h = 1024, rows = 64 * m;
  Mlp mlp(layers, h);
  globe::manual_seed(1);
  Tensor x = globe::randn({rows, h}), y = globe::randn({rows, h});
  const int p = globe::dist::world_size();
  std::vector<double> times, turns, ratios;
  if (p == 1) {
    // Without pipelining: the same micro-batches one after another, gradients accumulated.
    for (int i = 0; i < steps + 1; ++i) {
      const auto t = Clock::now();
      for (int k = 0; k < m; ++k) {
        const globe::Range r = globe::split_range(rows, m, k);
        Tensor out = globe::narrow(x, 0, r.start, r.length);
        for (auto* b : mlp.blocks()) out = b->forward(out);
        globe::mul(globe::mse_loss(out, globe::narrow(y, 0, r.start, r.length)), double(r.length) / rows).backward();
      }
      if (i > 0) times.push_back(ms_since(t));
    }
  } else {
    pp::Pipeline pipe(one_rank_groups(), mlp.blocks(), {.schedule = "1f1b", .microbatches = m});
    pp::Pipeline in_turn(one_rank_groups(), mlp.blocks(), {.schedule = "gpipe", .microbatches = 1});
    auto barrier = [] { globe::dist::group(globe::Placement::all().ranks()).barrier(); };
    for (int i = 0; i < steps + 1; ++i) {
      barrier();
      auto t = Clock::now();
      for (int k = 0; k < m; ++k) {
        const globe::Range r = globe::split_range(rows, m, k);
        in_turn.step(globe::narrow(x, 0, r.start, r.length), globe::narrow(y, 0, r.start, r.length), globe::mse_loss);
      }
      const double turn_ms = ms_since(t);
      barrier();
      t = Clock::now();
      pipe.step(x, y, globe::mse_loss);
      const double step_ms = ms_since(t);
      if (i == 0) continue;
      times.push_back(step_ms);
      turns.push_back(turn_ms);
      ratios.push_back(turn_ms / step_ms);
    }
  }
  const double step_ms = mean_over_ranks(median(times));
  const double turn_ms = p > 1 ? mean_over_ranks(median(turns)) : 0;
  const double ratio = p > 1 ? mean_over_ranks(median(ratios)) : 0;
  if (globe::dist::world_rank() == 0)
    std::printf("RESULT {\"case\": \"throughput\", \"ranks\": %d, \"microbatches\": %d, \"layers\": %d, \"hidden\": %ld, "
                "\"rows\": %ld, \"step_ms\": %.2f, \"steps_per_s\": %.3f, \"in_turn_ms\": %.2f, \"over_in_turn\": %.4f, "
                "\"theory\": %.4f, \"machine\": %s}\n",
                p, m, layers, long(h), long(rows), step_ms, 1e3 / step_ms, turn_ms, ratio, double(p * m) / (m + p - 1),
                bench::machine().dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Flags f(argc, argv, "bench_pipeline: pipeline schedules against their theory (bench/run_pipeline.sh runs each case)",
                       {{"case", "fidelity", "fidelity, memory, throughput or eager"},
                        {"schedule", "1f1b", "with --case fidelity: gpipe, 1f1b, interleaved, zb-h1 or zbv"},
                        {"steps", "5", "timed steps"}});
  const std::string& c = f.str("case");
  const int steps = int(f["steps"]);
  if (c == "fidelity") fidelity(f.str("schedule"), steps);
  else if (c == "memory") memory();
  else if (c == "throughput") throughput(steps);
  else if (c == "eager") eager(steps);
  else {
    std::fprintf(stderr, "bench_pipeline: unknown --case %s (fidelity, memory, throughput, eager)\n", c.c_str());
    return 2;
  }
  std::fflush(stdout);
  return 0;
}
