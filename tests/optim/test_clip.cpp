// clip_grad_norm over gradients of any layout and placement (1, 2 and 4 ranks): the same norm on
// every rank as one process computes, and the same clipped values.
#include <gmock/gmock.h>

#include <cmath>

#include "test_util.h"

namespace globe {
namespace {

using testing::me;
using testing::world;

struct Case {
  std::vector<Tensor> params;
};

// Three parameters with known gradients (float64), laid out as given.
std::vector<Tensor> make_params(const std::vector<std::pair<Placement, NdSbp>>& layouts, const std::vector<Tensor>& grads) {
  std::vector<Tensor> params;
  for (size_t i = 0; i < grads.size(); ++i) {
    Tensor p = zeros(grads[i].shape(), kFloat64);
    Tensor g = mul(grads[i], 1.0);  // a copy: clipping works in place
    if (i < layouts.size()) {
      const auto& [pl, s] = layouts[i];
      NdSbp param_sbp = partial_to_broadcast(s);
      p = from_full(p, pl, param_sbp);
      g = from_full(g, pl, s);
    }
    p.set_requires_grad(true);
    p.set_grad(g);
    params.push_back(p);
  }
  return params;
}

std::vector<Tensor> reference_grads() {
  manual_seed(3);
  return {randn({6, 4}, kFloat64), randn({5}, kFloat64), randn({3, 7}, kFloat64)};
}

double reference_norm(const std::vector<Tensor>& grads) {
  double s = 0;
  for (const Tensor& g : grads)
    for (double v : g.to_vector<double>()) s += v * v;
  return std::sqrt(s);
}

void check(const std::vector<std::pair<Placement, NdSbp>>& layouts, const std::string& what) {
  SCOPED_TRACE(what);
  const std::vector<Tensor> ref = reference_grads();
  const double want = reference_norm(ref);
  // No clipping: the norm, and the gradients untouched.
  std::vector<Tensor> params = make_params(layouts, ref);
  EXPECT_NEAR(optim::clip_grad_norm(params, 1e9), want, 1e-12 * want);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(testing::values(params[i].grad()), ref[i].to_vector<double>());
  // Clipping to 1: every gradient scaled by 1 / (norm + 1e-6).
  params = make_params(layouts, ref);
  EXPECT_NEAR(optim::clip_grad_norm(params, 1.0), want, 1e-12 * want);
  const double coef = 1.0 / (want + 1e-6);
  for (size_t i = 0; i < ref.size(); ++i) {
    const auto got = testing::values(params[i].grad());
    const auto w = ref[i].to_vector<double>();
    for (size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(got[j], w[j] * coef, 1e-14) << "parameter " << i;
  }
}

TEST(ClipGradNorm, LocalTensors) { check({}, "local"); }

TEST(ClipGradNorm, EveryLayoutGivesTheSingleProcessNorm) {
  const Placement all = Placement::all();
  check({{all, sbp::split(0)}, {all, sbp::broadcast}, {all, sbp::split(1)}}, "S(0), B, S(1)");
  check({{all, sbp::partial_sum}, {all, sbp::split(0)}, {all, sbp::broadcast}}, "P, S(0), B");
  // A pipeline: parameters on different placements.
  const Placement last = placement("cpu", {int64_t(world() - 1)}), first = placement("cpu", {0});
  check({{first, sbp::broadcast}, {last, sbp::broadcast}, {all, sbp::split(0)}}, "stages");
  if (world() == 4) {
    const Placement mesh = placement("cpu", {{0, 1}, {2, 3}});
    check({{mesh, NdSbp{sbp::split(0), sbp::broadcast}}, {mesh, NdSbp{sbp::broadcast, sbp::partial_sum}},
           {mesh, NdSbp{sbp::split(1), sbp::split(0)}}},
          "2-D mesh");
  }
}

TEST(WarmupCosineLr, WarmsUpThenDecays) {
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(0, 4, 104, 1.0, 0.1), 0.2);
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(3, 4, 104, 1.0, 0.1), 0.8);
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(4, 4, 104, 1.0, 0.1), 1.0);
  EXPECT_NEAR(optim::warmup_cosine_lr(54, 4, 104, 1.0, 0.1), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(104, 4, 104, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(500, 4, 104, 1.0, 0.1), 0.1);
}

// ---- dynamic loss scaling (optim::GradScaler) ----

// A small global model: w [4, 3] broadcast, trained with SGD on x [8, 4] split over the ranks.
struct Scaled {
  Tensor w;
  optim::SGD opt;
  Scaled() : w(init()), opt({w}, {.lr = 0.1}) {}
  static Tensor init() {
    manual_seed(5);
    return randn({4, 3}).to_global(Placement::all(), sbp::broadcast).set_requires_grad();
  }
  Tensor loss(int step) const {
    manual_seed(50 + uint64_t(step));
    const Tensor x = randn({8, 4}, Placement::all(), sbp::split(0));
    return mean(mul(matmul(x, w), matmul(x, w)));
  }
  std::vector<float> values() const { return w.to_global(Placement::all(), sbp::broadcast).to_vector<float>(); }
};

TEST(GradScaler, ScalingByAPowerOfTwoChangesNoBit) {
  Scaled plain, scaled;
  optim::GradScaler scaler;
  for (int s = 0; s < 3; ++s) {
    plain.loss(s).backward();
    plain.opt.step();
    plain.opt.zero_grad();
    scaler.scale(scaled.loss(s)).backward();
    EXPECT_TRUE(scaler.step(scaled.opt));
    scaler.update();
    scaled.opt.zero_grad();
  }
  EXPECT_EQ(scaled.values(), plain.values());
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  EXPECT_EQ(scaler.steps_skipped(), 0);
}

TEST(GradScaler, AnOverflowOnOneRankSkipsTheStepOnEveryRankAndBacksOff) {
  Scaled m;
  optim::GradScaler scaler({.init_scale = 1024.0, .growth_interval = 2});
  const std::vector<float> before = m.values();
  scaler.scale(m.loss(0)).backward();
  if (me() == world() - 1) {  // this rank's share of the gradient overflows
    Tensor g = m.w.grad().to_local();
    copy_(g, full(g.shape(), INFINITY));
  }
  EXPECT_FALSE(scaler.step(m.opt));
  scaler.update();
  m.opt.zero_grad();
  EXPECT_EQ(m.values(), before) << "a skipped step must not move the weights";
  EXPECT_EQ(scaler.get_scale(), 512.0);
  EXPECT_EQ(scaler.steps_skipped(), 1);
  // Two clean steps: the scale grows back.
  for (int s = 1; s <= 2; ++s) {
    scaler.scale(m.loss(s)).backward();
    EXPECT_TRUE(scaler.step(m.opt));
    scaler.update();
    m.opt.zero_grad();
  }
  EXPECT_EQ(scaler.get_scale(), 1024.0);
  EXPECT_NE(m.values(), before);
}

TEST(GradScaler, MistakesAreErrors) {
  EXPECT_THAT(testing::error_of([] { optim::GradScaler({.backoff_factor = 2.0}); }),
              ::testing::HasSubstr("[GradScaler] needs init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1"));
  optim::GradScaler scaler;
  EXPECT_THAT(testing::error_of([&] { scaler.update(); }),
              ::testing::HasSubstr("[GradScaler] update() without step() or unscale()"));
  Scaled m;
  scaler.scale(m.loss(0)).backward();
  scaler.unscale(m.opt);
  EXPECT_THAT(testing::error_of([&] { scaler.unscale(m.opt); }),
              ::testing::HasSubstr("[GradScaler] unscale() was already called"));
}

}  // namespace
}  // namespace globe
