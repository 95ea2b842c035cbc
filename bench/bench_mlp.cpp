// MLP training-step rate: the model and step of the PyTorch peer bench/torch_mlp.py, in Globe.
//
//   Linear(H, H) - ReLU - Linear(H, H), MSE loss, plain SGD (lr 0.01), one fixed random batch.
//   build/bin/bench_mlp [--hidden 1024] [--batch 64] [--steps 50] [--warmup 10] [--threads 1]
//   build/bin/globe-launch --nproc_per_node 2 build/bin/bench_mlp --threads 1   (data parallel)
//   ... bench_mlp --fingerprint-ab 1: also the cost of divergence fingerprints, as pairs of steps
//       with them on and off (the order alternating), reported as the median paired ratio.
//   ... bench_mlp --raw-ab N: also N rounds of Globe's step and the hand-written limit (raw_mlp.h:
//       cblas_sgemm and loops in two layouts; under the launcher a blocking ring all-reduce after
//       the backward).
//   ... bench_mlp --adamw 1 [--zero 1|2]: AdamW instead of SGD, with ZeRO's split state
//       (RESULT adds the optimizer-state bytes on rank 0).
//
// Under the launcher it trains data-parallel: parameters broadcast, the batch split(0) over the
// ranks (--batch stays per rank, like the peer's DDP), gradients all-reduced by the SBP rules.
//
// Times every step (zero_grad + forward + loss + backward + optimizer step) after --warmup
// untimed steps; prints a human line and one "RESULT {json}" line with the same field names as the
// peer. The model and the step live in MlpTrainer/run_timed_steps, which take the batch tensors,
// so a data-parallel variant only has to supply its rank's batch and reduce the gradients.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_common.h"
#include "raw_mlp.h"
#include "globe/globe.h"

using namespace globe;

namespace {

struct MlpTrainer {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::Optimizer> opt;

  // `adamw`: AdamW (lr 1e-3) instead of the peer's SGD, for ZeRO (SGD keeps no state to split).
  MlpTrainer(int64_t hidden, double lr, bool adamw = false, int zero_stage = 0) {
    manual_seed(0);  // identical initial weights on every rank
    model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(hidden, hidden),
                                             std::make_shared<nn::ReLU>(),
                                             std::make_shared<nn::Linear>(hidden, hidden));
    if (dist::is_distributed()) model->to_global(Placement::all(), sbp::broadcast);
    if (adamw) opt = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamOptions{.lr = 1e-3});
    else opt = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = lr});
    opt->set_zero_stage(zero_stage);
  }

  // One training step on (x, y); returns the loss (before the update). When `phases` is given,
  // appends the seconds spent in zero_grad, forward, loss, backward and the optimizer step.
  Tensor step(const Tensor& x, const Tensor& y, std::vector<std::vector<double>>* phases = nullptr) {
    double t[6];
    t[0] = bench::now_s();
    opt->zero_grad();
    t[1] = bench::now_s();
    Tensor out = (*model)(x);
    t[2] = bench::now_s();
    Tensor loss = mse_loss(out, y);
    t[3] = bench::now_s();
    loss.backward();
    t[4] = bench::now_s();
    opt->step();
    t[5] = bench::now_s();
    if (phases)
      for (int i = 0; i < 5; ++i) (*phases)[i].push_back(t[i + 1] - t[i]);
    return loss;
  }
};

const char* const kPhaseNames[5] = {"zero_grad", "forward", "loss", "backward", "optimizer_step"};

struct StepStats {
  std::vector<double> seconds;                       // per timed step
  std::vector<std::vector<double>> phases{5};        // per timed step, per phase
  double loss_first = 0, loss_last = 0;
};

StepStats run_timed_steps(MlpTrainer& trainer, const Tensor& x, const Tensor& y, int warmup, int steps) {
  for (int i = 0; i < warmup; ++i) trainer.step(x, y);
  StepStats st;
  Tensor loss;
  for (int i = 0; i < steps; ++i) {
    const double t0 = bench::now_s();
    loss = trainer.step(x, y, &st.phases);
    st.seconds.push_back(bench::now_s() - t0);
    if (i == 0) st.loss_first = loss.item<float>();
  }
  if (loss.defined()) st.loss_last = loss.item<float>();
  return st;
}

// Steps with divergence fingerprints on and off, in pairs (which goes first alternates): the
// overhead is the median over pairs of on / off - 1, robust to load that drifts over the run.
void fingerprint_ab(MlpTrainer& trainer, const Tensor& x, const Tensor& y, int steps) {
  std::vector<double> on, off, ratio;
  for (int i = 0; i < steps; ++i) {
    double t[2];
    for (int k = 0; k < 2; ++k) {
      const bool fp = (k + i) % 2 == 0;
      dist::set_fingerprints(fp);  // every rank switches at the same step
      const double t0 = bench::now_s();
      trainer.step(x, y);
      t[fp ? 0 : 1] = bench::now_s() - t0;
    }
    on.push_back(t[0]);
    off.push_back(t[1]);
    ratio.push_back(t[0] / t[1]);
  }
  dist::set_fingerprints(true);
  if (dist::world_rank() != 0) return;
  const double r = bench::median(ratio);
  nlohmann::json res = {{"bench", "fingerprint_overhead"}, {"world", dist::world_size()}, {"pairs", steps},
                        {"step_ms_on_median", 1000.0 * bench::median(on)},
                        {"step_ms_off_median", 1000.0 * bench::median(off)}, {"paired_ratio_median", r},
                        {"overhead_percent", 100.0 * (r - 1.0)}};
  std::printf("[fingerprints] %d pairs: %.3f ms/step on, %.3f ms/step off (medians); on/off %.4f (median of pairs): "
              "%+.2f %%\nRESULT %s\n",
              steps, 1000.0 * bench::median(on), 1000.0 * bench::median(off), r, 100.0 * (r - 1.0), bench::result(res).c_str());
}

// Globe's step against the hand-written one (raw_mlp.h) in both activation layouts, from the same
// weights on the same rows, in rounds of three steps (the order rotating): the median over rounds
// of raw / Globe step time per layout, so >= 1 is Globe at or past that step. All three train on,
// so their losses must stay together (printed).
void raw_ab(MlpTrainer& trainer, const Tensor& x, const Tensor& y, int64_t hidden, int64_t batch, int rounds) {
  bench::RawMlp rows(hidden, batch, dist::world_size(), 0.01f, false), cols(hidden, batch, dist::world_size(), 0.01f, true);
  for (bench::RawMlp* raw : {&rows, &cols}) {
    float* dst = raw->params();
    for (const Tensor& p : trainer.model->parameters()) {
      const std::vector<float> v = p.to_local().to_vector<float>();  // a local tensor is its own
      dst = std::copy(v.begin(), v.end(), dst);
    }
  }
  const std::vector<float> xl = x.to_local().to_vector<float>(), yl = y.to_local().to_vector<float>();
  std::vector<double> t[3], over_rows, over_cols;
  float first[3] = {0, 0, 0}, last[3] = {0, 0, 0};
  for (int i = 0; i < rounds; ++i) {
    double dt[3];
    for (int k = 0; k < 3; ++k) {
      const int v = (k + i) % 3;  // 0 Globe, 1 raw rows, 2 raw columns
      const double t0 = bench::now_s();
      last[v] = v == 0 ? trainer.step(x, y).item<float>() : (v == 1 ? rows : cols).step(xl.data(), yl.data());
      dt[v] = bench::now_s() - t0;
    }
    for (int v = 0; v < 3; ++v) {
      if (i == 0) first[v] = last[v];
      t[v].push_back(dt[v]);
    }
    over_rows.push_back(dt[1] / dt[0]);
    over_cols.push_back(dt[2] / dt[0]);
  }
  if (dist::world_rank() != 0) return;
  const double qr = bench::median(over_rows), qc = bench::median(over_cols);
  nlohmann::json res = {{"bench", "raw_limit"}, {"world", dist::world_size()}, {"rounds", rounds},
                        {"globe_step_ms_median", 1000.0 * bench::median(t[0])},
                        {"raw_rows_step_ms_median", 1000.0 * bench::median(t[1])},
                        {"raw_columns_step_ms_median", 1000.0 * bench::median(t[2])},
                        {"raw_rows_over_globe", qr}, {"raw_columns_over_globe", qc}, {"limit_over_globe", std::min(qr, qc)},
                        {"loss_first", {first[0], first[1], first[2]}}, {"loss_last", {last[0], last[1], last[2]}}};
  // The raw losses are this rank's rows only; Globe's the global batch's.
  std::printf("[raw limit] %d rounds: globe %.3f ms/step, hand-written %.3f (rows) / %.3f (columns) ms/step (medians); "
              "raw/globe %.4f / %.4f (median of rounds); loss %.5f / %.5f / %.5f -> %.5f / %.5f / %.5f\nRESULT %s\n",
              rounds, 1000.0 * bench::median(t[0]), 1000.0 * bench::median(t[1]), 1000.0 * bench::median(t[2]), qr, qc,
              first[0], first[1], first[2], last[0], last[1], last[2], bench::result(res).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bench::Flags f(argc, argv,
                 "bench_mlp: the training-step rate of bench/torch_mlp.py's MLP in Globe (data parallel under "
                 "globe-launch)",
                 {{"hidden", "1024", "width of the two Linear layers"},
                  {"batch", "64", "rows per step (per rank under the launcher)"},
                  {"steps", "50", "timed steps"},
                  {"warmup", "10", "untimed steps first"},
                  {"threads", "1", "BLAS threads per process"},
                  {"fingerprint-ab", "0", "1: also time steps with divergence fingerprints on and off"},
                  {"raw-ab", "0", "N > 0: also N rounds of Globe's step and the hand-written raw-BLAS (+ ring "
                                  "all-reduce) step in two layouts, order rotating"},
                  {"adamw", "0", "1: AdamW instead of SGD"},
                  {"zero", "0", "with --adamw 1: ZeRO stage 0, 1 or 2"}});
  const int threads = int(f["threads"]), steps = int(f["steps"]), warmup = int(f["warmup"]);
  const int64_t hidden = f["hidden"], batch = f["batch"];
  if (threads < 1 || steps < 1 || warmup < 0 || hidden < 1 || batch < 1) {
    std::fprintf(stderr, "bench_mlp: invalid flags\n");
    return 2;
  }
  bench::set_threads(threads);
  const int world = dist::world_size();
  const bool distributed = dist::is_distributed();
  const double lr = 0.01;

  MlpTrainer trainer(hidden, lr, f["adamw"] != 0, int(f["zero"]));
  manual_seed(1234);
  // Data parallel: a global batch of batch * world rows, each rank holding its `batch` rows.
  const Tensor x = distributed ? randn({batch * world, hidden}, Placement::all(), sbp::split(0)) : randn({batch, hidden});
  const Tensor y = distributed ? randn({batch * world, hidden}, Placement::all(), sbp::split(0)) : randn({batch, hidden});

  StepStats st = run_timed_steps(trainer, x, y, warmup, steps);

  std::vector<double> rates;
  double total = 0;
  for (double s : st.seconds) {
    rates.push_back(1.0 / s);
    total += s;
  }
  std::sort(rates.begin(), rates.end());
  const double med = bench::median(rates);
  int64_t nparams = 0;
  for (const Tensor& p : trainer.model->parameters()) nparams += p.numel();
  nlohmann::json res = {
      {"bench", "bench_mlp"}, {"mode", distributed ? "data-parallel" : "single"}, {"world", world}, {"threads_per_proc", threads},
      {"hidden", hidden}, {"batch_per_rank", batch}, {"params", nparams}, {"steps", steps},
      {"warmup", warmup}, {"steps_per_s_median", med}, {"steps_per_s_min", rates.front()},
      {"steps_per_s_max", rates.back()}, {"steps_per_s_mean", steps / total},
      {"samples_per_s_global_median", med * double(batch) * world}, {"step_ms_median", 1000.0 / med},
      {"loss_first", st.loss_first}, {"loss_last", st.loss_last},
      {"optimizer", f["adamw"] ? "adamw" : "sgd"}, {"zero_stage", f["zero"]},
      {"optimizer_state_bytes", trainer.opt->state_bytes()}};
  nlohmann::json phase_ms;
  for (int i = 0; i < 5; ++i) phase_ms[kPhaseNames[i]] = 1000.0 * bench::median(st.phases[i]);
  res["phase_ms_median"] = phase_ms;
  if (dist::world_rank() == 0) {
    std::printf("[globe %s] world=%d threads/proc=%d batch/rank=%lld H=%lld: %.1f steps/s median (min %.1f, "
                "max %.1f; mean %.1f), %.2f ms/step, %.0f samples/s global; loss %.4f -> %.4f\n",
                distributed ? "data-parallel" : "single", world, threads, (long long)batch, (long long)hidden, med, rates.front(), rates.back(),
                steps / total, 1000.0 / med, med * double(batch) * world, st.loss_first, st.loss_last);
    std::printf("  phases (median ms): zero_grad %.3f, forward %.3f, loss %.3f, backward %.3f, optimizer step %.3f\n",
                double(phase_ms["zero_grad"]), double(phase_ms["forward"]), double(phase_ms["loss"]),
                double(phase_ms["backward"]), double(phase_ms["optimizer_step"]));
    std::printf("RESULT %s\n", bench::result(res).c_str());
    std::fflush(stdout);
  }
  if (f["fingerprint-ab"]) fingerprint_ab(trainer, x, y, steps);
  if (f["raw-ab"] > 0) raw_ab(trainer, x, y, hidden, batch, int(f["raw-ab"]));
  return 0;
}
