// Deterministic mode (docs/design.md §10): on 1, 2 and 4 ranks, a sum over a split dim, a matmul
// over a split inner dim, and a data- and tensor-parallel training step give the single-process
// bits, not merely close values; a split that cannot keep the order is refused by name; and one
// rank adding its leaves in another order changes the bits (the negative control).
#include <cstring>

#include "global_test_util.h"

namespace globe {
namespace {

class Deterministic : public ::testing::Test {
 protected:
  void SetUp() override { set_deterministic(true); }
  void TearDown() override {
    detail::rotate_leaves_for_test(false);
    set_deterministic(false);
  }
};

// Bit equality of two float32 tensors' values (hex-equal, -0 against +0 included).
bool same_bits(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  return g.size() == w.size() && std::memcmp(g.data(), w.data(), g.size() * sizeof(float)) == 0;
}

Tensor values(const Shape& shape, uint64_t seed) {
  manual_seed(seed);
  return randn(shape);
}

TEST_F(Deterministic, MatmulOverASplitInnerDimGivesTheSingleProcessBits) {
  const Tensor a = values({6, 64}, 1), b = values({64, 5}, 2);
  const Tensor want = matmul(a, b);
  const Placement p = Placement::all();
  const Tensor got = matmul(from_full(a, p, sbp::split(1)), from_full(b, p, sbp::split(0)));
  EXPECT_TRUE(got.sbp()[0].is_partial());
  EXPECT_TRUE(same_bits(got.to_global(p, sbp::broadcast), want));
  EXPECT_TRUE(same_bits(got.to_global(p, sbp::split(1)), want));  // P -> S: the same tree
}

TEST_F(Deterministic, SumsAndMeansOverSplitDimsGiveTheSingleProcessBits) {
  const Tensor x = values({16, 8}, 3);
  const Placement p = Placement::all();
  for (int64_t d : {0, 1}) {
    const Tensor g = from_full(x, p, sbp::split(d));
    EXPECT_TRUE(same_bits(sum(g, {0}), sum(x, {0}))) << "split " << d;
    EXPECT_TRUE(same_bits(sum(g, {1}), sum(x, {1}))) << "split " << d;
    EXPECT_TRUE(same_bits(sum(g), sum(x))) << "split " << d;
    EXPECT_TRUE(same_bits(mean(g), mean(x))) << "split " << d;
  }
}

// The quick start's model in miniature: layer 1 data parallel (batch split, weight broadcast),
// then a column-parallel and a row-parallel layer; three SGD steps. The losses and the weights
// after them equal one process's, bit for bit, on every rank count the mode covers.
TEST_F(Deterministic, HybridTrainingStepsGiveTheSingleProcessBits) {
  const Placement p = Placement::all();
  const Tensor x = values({32, 16}, 4), y = values({32, 8}, 5);
  const std::vector<Tensor> init = {values({32, 16}, 6) * 0.2, values({32}, 7) * 0.1, values({64, 32}, 8) * 0.2,
                                    values({8, 64}, 9) * 0.2, values({64}, 12) * 0.1, values({8}, 13) * 0.1};
  const std::vector<NdSbp> layout = {sbp::broadcast, sbp::broadcast, sbp::split(0), sbp::split(1), sbp::split(0),
                                     sbp::broadcast};
  auto train = [&](bool global, std::vector<float>& losses) {
    std::vector<Tensor> w;
    for (size_t i = 0; i < init.size(); ++i)
      // a copy: SGD updates its parameters in place
      w.push_back((global ? from_full(init[i], p, layout[i]) : init[i] * 1.0).set_requires_grad());
    optim::SGD opt(w, {.lr = 0.05, .momentum = 0.9});
    const Tensor xs = global ? from_full(x, p, sbp::split(0)) : x, ys = global ? from_full(y, p, sbp::split(0)) : y;
    for (int step = 0; step < 10; ++step) {
      Tensor h = relu(linear(xs, w[0], w[1]));
      if (global) h = h.to_global(p, sbp::broadcast);
      const Tensor loss = mse_loss(linear(relu(linear(h, w[2], w[4])), w[3], w[5]), ys);
      loss.backward();
      opt.step();
      opt.zero_grad();
      losses.push_back(loss.item<float>());
    }
    return w;
  };
  std::vector<float> want_losses, got_losses;
  const std::vector<Tensor> want = train(false, want_losses), got = train(true, got_losses);
  ASSERT_EQ(got_losses.size(), want_losses.size());
  EXPECT_EQ(std::memcmp(got_losses.data(), want_losses.data(), want_losses.size() * sizeof(float)), 0)
      << "losses " << got_losses.back() << " against " << want_losses.back();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(same_bits(got[i].to_global(p, sbp::broadcast), want[i])) << "weight " << i;
}

TEST_F(Deterministic, AnUnevenSplitOfASummedDimIsRefusedByName) {
  const int n = dist::world_size();
  if (n < 2) GTEST_SKIP() << "needs 2 ranks";
  const Placement p = Placement::all();
  const Tensor a = from_full(values({4, n + 1}, 10), p, sbp::split(1));
  const Tensor b = from_full(values({n + 1, 3}, 11), p, sbp::split(0));
  try {
    (void)matmul(a, b);
    FAIL() << "an inner dim of " << n + 1 << " split over " << n << " ranks was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[matmul] deterministic mode: the inner dim (length " + std::to_string(n + 1)),
              std::string::npos)
        << e.what();
  }
}

// The negative control: rank 1 adds its leaves in a rotated order, and the bits change.
TEST_F(Deterministic, OneRankAddingItsLeavesInAnotherOrderChangesTheBits) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Tensor a = values({6, 64}, 1), b = values({64, 5}, 2);
  const Tensor want = matmul(a, b);
  const Placement p = Placement::all();
  detail::rotate_leaves_for_test(dist::world_rank() == 1);
  const Tensor got = matmul(from_full(a, p, sbp::split(1)), from_full(b, p, sbp::split(0))).to_global(p, sbp::broadcast);
  detail::rotate_leaves_for_test(false);
  EXPECT_FALSE(same_bits(got, want));
}

}  // namespace
}  // namespace globe
