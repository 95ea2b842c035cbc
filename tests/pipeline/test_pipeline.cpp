// Pipelines under globe-launch (1, 2 and 4 ranks): every schedule against one process running
// gradient accumulation over the same micro-batches (bit for bit with one rank per stage), data
// parallelism inside stages, a tied weight, the eager form, memory, and the errors.
#include <gmock/gmock.h>

#include <memory>

#include "test_util.h"

namespace globe {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::me;
using testing::world;
namespace pp = pipeline;

constexpr int64_t kD = 6;

// Blocks Linear, Tanh, Linear, Tanh, ...: `n` of them, float64, the same values on every rank.
struct Chain {
  std::vector<std::shared_ptr<nn::UnaryModule>> layers;
  Chain(int n, int64_t d = kD, DType dtype = kFloat64, uint64_t seed = 7) {
    manual_seed(seed);
    for (int i = 0; i < n; ++i) {
      if (i % 2 == 0) layers.push_back(std::make_shared<nn::Linear>(d, d));
      else layers.push_back(std::make_shared<nn::Tanh>());
      layers.back()->to(dtype);
    }
  }
  std::vector<nn::UnaryModule*> blocks() const {
    std::vector<nn::UnaryModule*> b;
    for (auto& l : layers) b.push_back(l.get());
    return b;
  }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> p;
    for (auto& l : layers)
      for (auto& t : l->parameters()) p.push_back(t);
    return p;
  }
  Tensor forward(Tensor h) const {
    for (auto& l : layers) h = l->forward(h);
    return h;
  }
};

Tensor mse(const Tensor& y, const Tensor& t) { return mse_loss(y, t); }

// The single-process reference: gradient accumulation over the pipeline's micro-batches.
double reference_step(const Chain& c, const Tensor& x, const Tensor& t, int m) {
  const int64_t rows = x.shape()[0];
  Tensor total;
  for (int k = 0; k < m; ++k) {
    const Range r = split_range(rows, m, k);
    Tensor l = mul(mse(c.forward(narrow(x, 0, r.start, r.length)), narrow(t, 0, r.start, r.length)),
                   double(r.length) / double(rows));
    l.backward();
    NoGradGuard g;
    total = total.defined() ? add(total, l.detach()) : l.detach();
  }
  return total.item<double>();
}

// This rank's copy of a global tensor's whole value when it holds one (every stage here keeps its
// parameters broadcast), without any communication; empty elsewhere.
std::vector<double> held(const Tensor& t) {
  if (!t.is_global()) return t.to_vector<double>();
  if (!t.placement().contains(me())) return {};
  return t.to_local().to_vector<double>();
}

void expect_bitwise(const std::vector<Tensor>& got, const std::vector<Tensor>& want, bool grads, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor g = grads ? got[i].grad() : got[i];
    const Tensor w = grads ? want[i].grad() : want[i];
    if (!got[i].placement().contains(me())) continue;
    ASSERT_TRUE(g.defined()) << what << " tensor " << i;
    EXPECT_EQ(held(g), w.to_vector<double>()) << what << " tensor " << i;
  }
}

std::vector<Placement> one_rank_groups(int p) {
  std::vector<Placement> g;
  for (int r = 0; r < p; ++r) g.push_back(placement("cpu", {int64_t(r)}));
  return g;
}

// Trains `steps` SGD steps with the pipeline and with the reference; every loss, gradient and
// parameter must agree bit for bit. With `recompute`, every block of the pipeline recomputes its
// forward in the backward (the reference does not).
void check_against_reference(const std::string& schedule, int p, int m, int chunks, bool recompute = false) {
  const int n = 2 * p * chunks + 1;
  const int64_t rows = 2 * p + 3;
  SCOPED_TRACE(schedule + " p=" + std::to_string(p) + " m=" + std::to_string(m) + (recompute ? " recompute" : ""));
  Chain piped(n), ref(n);
  for (auto& layer : piped.layers) layer->set_recompute(recompute);
  pp::Pipeline pipe(one_rank_groups(p), piped.blocks(), {.schedule = schedule, .microbatches = m, .chunks = chunks});
  optim::SGD opt(piped.parameters(), {.lr = 0.1});
  optim::SGD ref_opt(ref.parameters(), {.lr = 0.1});
  for (int step = 0; step < 2; ++step) {
    manual_seed(100 + uint64_t(step));
    Tensor x = randn({rows, kD}, kFloat64), t = randn({rows, kD}, kFloat64);
    pp::StepResult res = pipe.step(x, t, mse);
    const double want = reference_step(ref, x, t, m);
    if (res.loss.placement().contains(me())) {
      EXPECT_EQ(res.loss.to_local().item<double>(), want) << "step " << step;
    }
    expect_bitwise(piped.parameters(), ref.parameters(), true, "gradient");
    opt.step();
    ref_opt.step();
    opt.zero_grad();
    ref_opt.zero_grad();
    expect_bitwise(piped.parameters(), ref.parameters(), false, "parameter");
  }
}

std::vector<int> microbatch_counts(int p) {
  std::vector<int> ms;
  for (int m : {1, p - 1, p, 2 * p + 1})
    if (m >= 1 && std::find(ms.begin(), ms.end(), m) == ms.end()) ms.push_back(m);
  return ms;
}

TEST(Pipeline, EveryScheduleEqualsGradientAccumulationBitForBit) {
  const int p = world();
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"})
    for (int m : microbatch_counts(p)) check_against_reference(schedule, p, m, 1);
  for (int m : microbatch_counts(p)) check_against_reference("interleaved", p, m, 2);
  for (int m : microbatch_counts(p)) check_against_reference("zbv", p, m, 2);
}

TEST(Pipeline, EveryScheduleWithRecomputationEqualsGradientAccumulationBitForBit) {
  // zb-h1 splits each backward in two: one recomputation serves both halves.
  const int p = world();
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"})
    for (int m : microbatch_counts(p)) check_against_reference(schedule, p, m, 1, true);
  check_against_reference("interleaved", p, p, 2, true);
  check_against_reference("zbv", p, p + 1, 2, true);
}

TEST(Pipeline, OneStageIsThePlainModel) {
  if (me() != 0) return;  // a pipeline of one rank: the others take no part
  Chain piped(3), ref(3);
  pp::Pipeline pipe({placement("cpu", {0})}, piped.blocks(), {.microbatches = 1});
  manual_seed(5);
  Tensor x = randn({4, kD}, kFloat64), t = randn({4, kD}, kFloat64);
  const double got = pipe.step(x, t, mse).loss.to_local().item<double>();
  Tensor l = mse(ref.forward(x), t);
  l.backward();
  EXPECT_EQ(got, l.item<double>());
  expect_bitwise(piped.parameters(), ref.parameters(), true, "gradient");
}

TEST(Pipeline, RanksOutsideThePipelineTakeNoPart) {
  // Only ranks 0 and 1 build and run the pipeline: no step may need the other ranks (no
  // world-wide synchronisation inside a step).
  if (world() < 3 || me() >= 2) GTEST_SKIP() << "needs 3+ ranks; ranks 2+ stay out";
  Chain piped(5), ref(5);
  pp::Pipeline pipe(one_rank_groups(2), piped.blocks(), {.schedule = "1f1b", .microbatches = 3});
  manual_seed(9);
  Tensor x = randn({7, kD}, kFloat64), t = randn({7, kD}, kFloat64);
  pp::StepResult res = pipe.step(x, t, mse);
  const double want = reference_step(ref, x, t, 3);
  if (me() == 1) {
    EXPECT_EQ(res.loss.to_local().item<double>(), want);
  }
  expect_bitwise(piped.parameters(), ref.parameters(), true, "gradient");
}

TEST(Pipeline, DataParallelStagesMatchTheSingleProcess) {
  if (world() != 4) GTEST_SKIP() << "2 stages x 2-rank data parallel needs 4 ranks";
  Chain piped(5), ref(5);
  // Each stage a 1-D mesh of two ranks: parameters broadcast, the micro-batch split over rows.
  pp::Pipeline pipe({placement("cpu", {0, 1}), placement("cpu", {2, 3})}, piped.blocks(),
                    {.schedule = "1f1b", .microbatches = 3});
  optim::SGD opt(piped.parameters(), {.lr = 0.1});
  optim::SGD ref_opt(ref.parameters(), {.lr = 0.1});
  for (int step = 0; step < 2; ++step) {
    manual_seed(30 + uint64_t(step));
    Tensor x = randn({12, kD}, kFloat64), t = randn({12, kD}, kFloat64);
    Tensor gx = from_full(x, placement("cpu", {0, 1}), sbp::split(0));
    Tensor gt = from_full(t, placement("cpu", {2, 3}), sbp::split(0));
    pp::StepResult res = pipe.step(gx, gt, mse);
    const double want = reference_step(ref, x, t, 3);
    EXPECT_NEAR(res.loss.item<double>(), want, 1e-12 * std::abs(want));
    const auto ps = piped.parameters(), rs = ref.parameters();
    for (size_t i = 0; i < ps.size(); ++i) {
      const auto g = testing::values(ps[i].grad()), w = testing::values(rs[i].grad());
      ASSERT_EQ(g.size(), w.size());
      for (size_t j = 0; j < g.size(); ++j) EXPECT_NEAR(g[j], w[j], 1e-12) << "parameter " << i;
      EXPECT_EQ(ps[i].grad().sbp(), ps[i].sbp()) << "gradient read in the parameter's layout";
    }
    opt.step();
    ref_opt.step();
    opt.zero_grad();
    ref_opt.zero_grad();
  }
}

TEST(Pipeline, TensorParallelStagesMatchTheSingleProcess) {
  if (world() != 4) GTEST_SKIP() << "2 stages x 2-rank tensor parallel needs 4 ranks";
  Chain piped(5), ref(5);
  const Placement p0 = placement("cpu", {0, 1}), p1 = placement("cpu", {2, 3});
  // Column-parallel first Linear of each stage, row-parallel second: the stage boundary carries
  // a split activation, the losses a partial sum reduced inside the last stage.
  auto column = [](nn::UnaryModule* m, const Placement& p) {
    m->distribute(p, {{"weight", sbp::split(0)}, {"bias", sbp::split(0)}}, sbp::broadcast);
  };
  auto row = [](nn::UnaryModule* m, const Placement& p) {
    m->distribute(p, {{"weight", sbp::split(1)}}, sbp::broadcast);
  };
  column(piped.layers[0].get(), p0);
  row(piped.layers[2].get(), p0);
  column(piped.layers[4].get(), p1);
  pp::Pipeline pipe({p0, p1}, piped.blocks(), {.schedule = "zb-h1", .microbatches = 3, .stage_of_block = {0, 0, 0, 1, 1}});
  manual_seed(40);
  Tensor x = randn({9, kD}, kFloat64), t = randn({9, kD}, kFloat64);
  const double got = pipe.step(x, t, mse).loss.item<double>();
  const double want = reference_step(ref, x, t, 3);
  EXPECT_NEAR(got, want, 1e-12 * std::abs(want));
  const auto ps = piped.parameters(), rs = ref.parameters();
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto g = testing::values(ps[i].grad()), w = testing::values(rs[i].grad());
    ASSERT_EQ(g.size(), w.size());
    for (size_t j = 0; j < g.size(); ++j) EXPECT_NEAR(g[j], w[j], 1e-12) << "parameter " << i;
    EXPECT_EQ(ps[i].grad().sbp(), ps[i].sbp());
  }
}

// A head whose weight is a slot the pipeline fills from another stage's parameter.
struct TiedHead : nn::UnaryModule {
  Tensor weight;
  explicit TiedHead(const Tensor& w) : weight(w) { register_buffer("weight", weight); }
  Tensor forward(const Tensor& x) override { return matmul(x, transpose(weight, 0, 1)); }
};

TEST(Pipeline, TiedWeightGetsTheSumOfBothStagesGradients) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int p = world();
  Chain piped(2 * p - 1), ref(2 * p - 1);
  manual_seed(3);
  nn::Linear embed(kD, kD, false), ref_embed(kD, kD, false);
  embed.to(kFloat64);
  ref_embed.to(kFloat64);
  copy_(ref_embed.weight, embed.weight);
  TiedHead head(zeros({kD, kD}, kFloat64));
  pp::Pipeline pipe(one_rank_groups(p), piped.blocks(), {.schedule = "1f1b", .microbatches = 2}, {&embed}, {&head});
  pipe.tie(embed.weight, head.weight);
  manual_seed(4);
  Tensor x = randn({5, kD}, kFloat64), t = randn({5, kD}, kFloat64);
  const double got = pipe.step(x, t, mse).loss.item<double>();
  // Reference: one process, the same tensor used at both ends.
  Tensor total;
  for (int k = 0; k < 2; ++k) {
    const Range r = split_range(5, 2, k);
    Tensor y = matmul(ref.forward(ref_embed(narrow(x, 0, r.start, r.length))), transpose(ref_embed.weight, 0, 1));
    Tensor l = mul(mse(y, narrow(t, 0, r.start, r.length)), double(r.length) / 5.0);
    l.backward();
    total = total.defined() ? add(total, l.detach()) : l.detach();
  }
  EXPECT_NEAR(got, total.item<double>(), 1e-13);
  const auto g = testing::values(embed.weight.grad()), w = testing::values(ref_embed.weight.grad());
  for (size_t j = 0; j < g.size(); ++j) EXPECT_NEAR(g[j], w[j], 1e-12);
  EXPECT_FALSE(head.weight.grad().defined()) << "the slot's gradient went to the parameter";
}

TEST(Pipeline, ATiedParameterCannotBeFullySharded) {
  // Stage 0 on ranks {0, 1}: ZeRO-3 would split the embedding there, but stage 1 reads all of it.
  if (world() != 4) GTEST_SKIP() << "4 ranks: two stages of two";
  for (bool shard_first : {true, false}) {
    Chain piped(3);
    nn::Linear embed(kD, kD, false);
    embed.to(kFloat64);
    TiedHead head(zeros({kD, kD}, kFloat64));
    pp::Pipeline pipe({placement("cpu", {0, 1}), placement("cpu", {2, 3})}, piped.blocks(),
                      {.schedule = "1f1b", .microbatches = 2}, {&embed}, {&head});
    if (shard_first) nn::fully_shard(embed);
    const std::string e = error_of([&] {
      pipe.tie(embed.weight, head.weight);
      if (!shard_first) nn::fully_shard(embed);
      manual_seed(4);
      pipe.step(randn({4, kD}, kFloat64), randn({4, kD}, kFloat64), mse);
    });
    EXPECT_THAT(e, HasSubstr("is shared with stage 1 and fully sharded (nn::fully_shard) on its own stage"))
        << (shard_first ? "sharded before tie()" : "sharded after tie()");
  }
}

TEST(Pipeline, EagerFormAccumulatesLikeOneProcess) {
  // The plain form: stages are modules on placements, the activation moves with to_global, one
  // backward per micro-batch. Stage 0's backward waits until its gradient is read.
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Placement p0 = placement("cpu", {0}), p1 = placement("cpu", {1});
  Chain s0(3, kD, kFloat64, 11), s1(3, kD, kFloat64, 12), r0(3, kD, kFloat64, 11), r1(3, kD, kFloat64, 12);
  for (auto& l : s0.layers) l->to_global(p0, sbp::broadcast);
  for (auto& l : s1.layers) l->to_global(p1, sbp::broadcast);
  manual_seed(21);
  Tensor x = randn({6, kD}, kFloat64), t = randn({6, kD}, kFloat64);
  Tensor gx = from_full(x, p0, sbp::broadcast), gt = from_full(t, p1, sbp::broadcast);
  for (int k = 0; k < 3; ++k) {
    Tensor h = s0.forward(narrow(gx, 0, 2 * k, 2)).to_global(p1);
    mul(mse(s1.forward(h), narrow(gt, 0, 2 * k, 2)), 1.0 / 3).backward();
    mul(mse(r1.forward(r0.forward(narrow(x, 0, 2 * k, 2))), narrow(t, 0, 2 * k, 2)), 1.0 / 3).backward();
  }
  expect_bitwise(s0.parameters(), r0.parameters(), true, "stage 0 gradient");
  expect_bitwise(s1.parameters(), r1.parameters(), true, "stage 1 gradient");
}

TEST(Pipeline, PeakAliveMicrobatchesPerSchedule) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int p = world(), m = 8;
  for (const char* schedule : {"gpipe", "1f1b"}) {
    Chain c(p);
    pp::Pipeline pipe(one_rank_groups(p), c.blocks(), {.schedule = schedule, .microbatches = m});
    manual_seed(1);
    Tensor x = randn({16, kD}, kFloat64), t = randn({16, kD}, kFloat64);
    pp::StepResult res = pipe.step(x, t, mse);
    const int want = std::string(schedule) == "gpipe" ? m : p - me();
    EXPECT_EQ(res.peak_alive[size_t(me())], want) << schedule << " on stage " << me();
    EXPECT_EQ(pipe.schedule().simulated_peak_alive()[size_t(me())], want);
  }
}

TEST(Pipeline, ActivationsAboveTheEagerLimitIn1F1BDoNotDeadlock) {
  // 2 MiB activations and gradients crossing in both directions at once.
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int64_t d = 512, rows = 4096;
  Chain piped(2, d, kFloat32), ref(2, d, kFloat32);
  pp::Pipeline pipe(one_rank_groups(2), piped.blocks(), {.schedule = "1f1b", .microbatches = 4});
  manual_seed(2);
  Tensor x = randn({rows, d}), t = randn({rows, d});
  pp::StepResult res = pipe.step(x, t, mse);
  const int64_t mb = rows / 4;
  Tensor total;
  for (int k = 0; k < 4; ++k) {
    Tensor l = mul(mse(ref.forward(narrow(x, 0, k * mb, mb)), narrow(t, 0, k * mb, mb)), 0.25);
    l.backward();
    total = total.defined() ? add(total, l.detach()) : l.detach();
  }
  if (me() == 1) {
    EXPECT_EQ(res.loss.to_local().item<float>(), total.item<float>());
  }
  const auto ps = piped.parameters(), rs = ref.parameters();
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i].placement().contains(me())) {
      EXPECT_EQ(held(ps[i].grad()), testing::values(rs[i].grad()));
    }
}

TEST(Pipeline, AStageOutputOfTheWrongShapeIsTheSameErrorOnBothEnds) {
  if (world() < 2 || me() >= 2) GTEST_SKIP() << "ranks 0 and 1";
  Chain c(4);
  pp::Pipeline pipe(one_rank_groups(2), c.blocks(), {.schedule = "gpipe", .microbatches = 2});
  pipe.expect_input(1, {-1, kD + 1});
  manual_seed(1);
  Tensor x = randn({4, kD}, kFloat64), t = randn({4, kD}, kFloat64);
  const std::string msg = error_of([&] { pipe.step(x, t, mse); });
  EXPECT_THAT(msg, HasSubstr("forward, stage 0 -> 1, micro-batch 0: stage 0 sends float64[2, 6]"));
  EXPECT_THAT(msg, HasSubstr("stage 1 expects its input to be [-1, 7]"));
}

TEST(Pipeline, BadInputIsAnErrorBeforeAnyCommunication) {
  Chain c(3);
  const auto groups = one_rank_groups(1);
  auto make = [&](pp::Options o, std::vector<Placement> g) { pp::Pipeline pipe(std::move(g), c.blocks(), o); };
  EXPECT_THAT(error_of([&] { make({.schedule = "pipedream"}, groups); }), HasSubstr("unknown schedule 'pipedream'"));
  EXPECT_THAT(error_of([&] { make({.microbatches = 0}, groups); }), HasSubstr("must be at least 1, got 0"));
  EXPECT_THAT(error_of([&] { make({.microbatches = -2}, groups); }), HasSubstr("must be at least 1, got -2"));
  EXPECT_THAT(error_of([&] { make({.stage_of_block = {0, 1, 1}}, groups); }),
              HasSubstr("puts block 1 on stage 1, which does not exist"));
  EXPECT_THAT(error_of([&] { make({.schedule = "interleaved", .chunks = 4}, groups); }),
              HasSubstr("4 stages but only 3 blocks"));
  EXPECT_THAT(error_of([&] { make({.schedule = "1f1b", .chunks = 2}, groups); }),
              HasSubstr("applies to the interleaved and zbv schedules only"));
  if (world() >= 2) {
    EXPECT_THAT(error_of([&] { make({}, {placement("cpu", {0, 1}), placement("cpu", {1})}); }),
                HasSubstr("must not share ranks: rank 1"));
    EXPECT_THAT(error_of([&] { make({.stage_of_block = {0, 0, 0}}, one_rank_groups(2)); }),
                HasSubstr("leaves stage 1 empty"));
  }
}

TEST(Pipeline, ModuleToPlacementKeepsLayoutsAndRefusesAnotherMeshRank) {
  if (world() != 4) GTEST_SKIP() << "needs 4 ranks";
  manual_seed(1);
  nn::Linear a(4, 6);
  manual_seed(1);
  nn::Linear b(4, 6);
  a.distribute(placement("cpu", {0, 1}), {{"weight", sbp::split(0)}}, sbp::broadcast);
  a.to_global(placement("cpu", {2, 3}));
  EXPECT_EQ(a.weight.placement(), placement("cpu", {2, 3}));
  EXPECT_EQ(a.weight.sbp(), NdSbp(sbp::split(0)));
  EXPECT_EQ(testing::values(a.weight), testing::values(b.weight.to_global(Placement::all(), sbp::broadcast)));
  b.distribute(placement("cpu", {{0, 1}, {2, 3}}), {}, NdSbp{sbp::broadcast, sbp::broadcast});
  EXPECT_THAT(error_of([&] { b.to_global(placement("cpu", {0, 1})); }),
              HasSubstr("needs an SBP for that mesh: to_global(placement, sbp)"));
}

TEST(Pipeline, TooFewRowsForTheMicrobatches) {
  if (me() != 0) return;
  Chain c(1);
  pp::Pipeline pipe({placement("cpu", {0})}, c.blocks(), {.microbatches = 5});
  EXPECT_THAT(error_of([&] { pipe.step(randn({3, kD}, kFloat64), randn({3, kD}, kFloat64), mse); }),
              HasSubstr("5 micro-batches need at least 5 rows; the batch has 3"));
}

}  // namespace
}  // namespace globe
