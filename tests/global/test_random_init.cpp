// randint and torch.nn.init's initialisers (globe/nn/init.h), local and global: values in range
// with the moments they should have, a global tensor's values the same in every layout (as randn's),
// and the bad inputs refused by name. Runs with 1 process and under globe-launch with 2 and 4 ranks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "global_test_util.h"
#include "test_util.h"

namespace globe {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::error_of;
using testing::world;

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }
double std_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size()));
}

TEST(Randint, LocalValuesCoverTheRangeAndOnlyIt) {
  manual_seed(1);
  Tensor t = randint(-3, 4, {4000});
  EXPECT_EQ(t.dtype(), kInt64);
  const auto v = t.to_vector<int64_t>();
  EXPECT_EQ(*std::min_element(v.begin(), v.end()), -3);
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 3);
  for (int64_t k = -3; k <= 3; ++k) {
    const auto n = std::count(v.begin(), v.end(), k);
    EXPECT_GT(n, 4000 / 7 - 120) << k;  // about 571 each
    EXPECT_LT(n, 4000 / 7 + 120) << k;
  }
  EXPECT_THAT(error_of([] { (void)randint(5, 5, {2}); }),
              AllOf(StartsWith("[randint]"), HasSubstr("low 5, high 5")));
}

TEST(Randint, GlobalValuesAreTheSameInEveryLayout) {
  const Shape shape{2 * int64_t(world()) + 1, 3};
  manual_seed(2);
  const auto whole = randint(0, 1000, shape, Placement::all(), sbp::broadcast).to_vector<int64_t>();
  for (const Sbp& s : {sbp::split(0), sbp::split(1)}) {
    manual_seed(2);
    EXPECT_EQ(randint(0, 1000, shape, Placement::all(), s).to_vector<int64_t>(), whole) << s.to_string();
  }
  manual_seed(2);
  EXPECT_EQ(randint(0, 1000, shape).to_vector<int64_t>(), whole);  // and as a local tensor
}

TEST(Init, LocalFillsHaveTheirRangesAndMoments) {
  manual_seed(3);
  Tensor w = zeros({200, 100});
  nn::init::uniform_(w, -0.5, 0.25);
  auto v = w.to_vector<double>();
  EXPECT_GE(*std::min_element(v.begin(), v.end()), -0.5);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), 0.25);
  EXPECT_NEAR(mean_of(v), -0.125, 0.01);
  nn::init::normal_(w, 2.0, 0.5);
  v = w.to_vector<double>();
  EXPECT_NEAR(mean_of(v), 2.0, 0.02);
  EXPECT_NEAR(std_of(v), 0.5, 0.02);
  // xavier: std = gain * sqrt(2 / (fan_in + fan_out)) = sqrt(2 / 300); uniform bound sqrt(3) std.
  nn::init::xavier_uniform_(w);
  v = w.to_vector<double>();
  EXPECT_LE(*std::max_element(v.begin(), v.end()), std::sqrt(6.0 / 300.0));
  EXPECT_NEAR(std_of(v), std::sqrt(2.0 / 300.0), 0.003);
  nn::init::xavier_normal_(w, 2.0);
  EXPECT_NEAR(std_of(w.to_vector<double>()), 2.0 * std::sqrt(2.0 / 300.0), 0.005);
  // kaiming: std = gain / sqrt(fan); relu's gain sqrt(2), fan_in 100, fan_out 200.
  nn::init::kaiming_normal_(w, 0.0, "fan_in", "relu");
  EXPECT_NEAR(std_of(w.to_vector<double>()), std::sqrt(2.0 / 100.0), 0.004);
  nn::init::kaiming_uniform_(w, 0.0, "fan_out", "relu");
  v = w.to_vector<double>();
  EXPECT_LE(*std::max_element(v.begin(), v.end()), std::sqrt(3.0) * std::sqrt(2.0 / 200.0));
  EXPECT_NEAR(std_of(v), std::sqrt(2.0 / 200.0), 0.003);
  nn::init::constant_(w, 0.75);
  v = w.to_vector<double>();
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](double x) { return x == 0.75; }));
  nn::init::zeros_(w);
  EXPECT_EQ(sum(w).item<double>(), 0.0);
  nn::init::ones_(w);
  EXPECT_EQ(sum(w).item<double>(), 20000.0);
  // Fans as torch's: dims after the first two are the receptive field.
  const nn::init::Fans f = nn::init::fans_of(zeros({8, 4, 3, 3}), "test");
  EXPECT_EQ(f.in, 36);
  EXPECT_EQ(f.out, 72);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
}

TEST(Init, InPlaceKeepsTheParameterAndRecordsNoGradient) {
  Tensor p = zeros({3, 4});
  p.set_requires_grad();
  const Tensor held = p;
  nn::init::normal_(p);
  EXPECT_TRUE(held.same(p));
  EXPECT_TRUE(p.is_leaf());
  EXPECT_NE(sum(mul(p, p)).item<double>(), 0.0);
}

// Under SkipInitGuard the layers allocate their weights without filling them (no memory touched),
// and every later draw is the one an initialised model would see.
TEST(Init, SkipInitLeavesTheDrawsThatFollowUnchanged) {
  auto build_then_draw = [](bool skip) {
    manual_seed(11);
    std::optional<nn::init::SkipInitGuard> guard;
    if (skip) guard.emplace();
    nn::Linear fc(5, 3);
    nn::Embedding table(7, 2);
    EXPECT_TRUE(nn::init::skipping_init() == skip);
    guard.reset();
    EXPECT_EQ(fc.weight.shape(), (Shape{3, 5}));
    EXPECT_EQ(fc.bias.shape(), (Shape{3}));
    EXPECT_EQ(table.weight.shape(), (Shape{7, 2}));
    return randn({4}).to_vector<float>();
  };
  const std::vector<float> initialised = build_then_draw(false);
  EXPECT_EQ(build_then_draw(true), initialised);
  EXPECT_FALSE(nn::init::skipping_init());
  {
    nn::init::SkipInitGuard outer;
    { nn::init::SkipInitGuard inner; }
    EXPECT_TRUE(nn::init::skipping_init());  // nested guards restore what was before them
  }
  EXPECT_FALSE(nn::init::skipping_init());
}

TEST(Init, GlobalFillsEqualTheWholeValueInEveryLayout) {
  const Shape shape{2 * int64_t(world()) + 1, 6};
  auto init_in = [&](const NdSbp& layout) {
    Tensor w = zeros(shape, Placement::all(), layout);
    manual_seed(4);
    nn::init::kaiming_uniform_(w, std::sqrt(5.0));
    nn::init::normal_(w, 0.0, 0.02);  // the second fill replaces the first: both streams drawn
    return w.to_vector<double>();
  };
  const auto whole = init_in(NdSbp(sbp::broadcast));
  EXPECT_EQ(init_in(NdSbp(sbp::split(0))), whole);
  EXPECT_EQ(init_in(NdSbp(sbp::split(1))), whole);
}

TEST(Init, BadInputIsRefusedByName) {
  Tensor v = zeros({5});
  EXPECT_THAT(error_of([&] { nn::init::xavier_uniform_(v); }),
              AllOf(StartsWith("[xavier_uniform_]"), HasSubstr("at least 2 dims"), HasSubstr("float32[5]")));
  Tensor w = zeros({3, 3});
  EXPECT_THAT(error_of([&] { nn::init::kaiming_normal_(w, 0.0, "fan_middle"); }),
              AllOf(StartsWith("[kaiming_normal_]"), HasSubstr("'fan_middle'")));
  EXPECT_THAT(error_of([] { (void)nn::init::calculate_gain("swish"); }),
              AllOf(StartsWith("[calculate_gain]"), HasSubstr("'swish'")));
  Tensor ints = zeros({3}, kInt64);
  EXPECT_THAT(error_of([&] { nn::init::uniform_(ints); }),
              AllOf(StartsWith("[uniform_]"), HasSubstr("floating")));
  Tensor partial = zeros({4}, Placement::all(), sbp::partial_sum);
  EXPECT_THAT(error_of([&] { nn::init::normal_(partial); }), AllOf(StartsWith("[normal_]"), HasSubstr("partial_sum")));
}

}  // namespace
}  // namespace globe
