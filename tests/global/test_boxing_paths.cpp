// Which boxing runs, not only its result: a mesh axis of one rank moves nothing and never forces
// the gather-everything fallback, and reshapes that add extent-1 dims keep a split where it is.
// Both were real costs: a data-parallel GPT on a [dp, 1] mesh sent activations around each step.
#include <gtest/gtest.h>

#include "global_test_util.h"

namespace globe {
namespace {

// The mesh [world, 1]: data parallel over every rank, a tensor-parallel axis of one.
Placement column_mesh() {
  std::vector<int> ranks;
  for (int r = 0; r < dist::world_size(); ++r) ranks.push_back(r);
  return Placement("cpu", ranks, {int64_t(ranks.size()), 1});
}

TEST(BoxingPaths, AnAxisOfOneRankMovesNothingAndNeverFallsBack) {
  const Placement p = column_mesh();
  manual_seed(3);
  const Tensor full = randn({8, 6});
  // (S(0), S(0)) -> (S(0), B): only the axis of one rank changes.
  const Tensor x = from_full(full, p, NdSbp({sbp::split(0), sbp::split(0)}));
  reset_boxing_paths();
  const Tensor y = x.to_global(p, NdSbp({sbp::split(0), sbp::broadcast}));
  EXPECT_TRUE(boxing_paths().empty()) << "moving a layout on an axis of one rank should not communicate";
  testing::expect_same_values(y.to_local(), testing::expected_shard(full, p, y.sbp(), dist::world_rank()), "values");
  // (S(1), S(0)) -> (S(0), S(1)): one step on axis 0 (an all-to-all), not gather + slice.
  const Tensor z = from_full(full, p, NdSbp({sbp::split(1), sbp::split(0)})).to_global(p, NdSbp({sbp::split(0), sbp::split(1)}));
  testing::expect_same_values(z.to_local(), testing::expected_shard(full, p, z.sbp(), dist::world_rank()), "values");
  for (const auto& [path, n] : boxing_paths()) EXPECT_EQ(path.find("fallback"), std::string::npos) << path;
}

TEST(BoxingPaths, SlicingABroadcastValueOnTwoAxesIsLocal) {
  if (dist::world_size() % 2) GTEST_SKIP() << "needs a 2-D mesh";
  std::vector<int> ranks;
  for (int r = 0; r < dist::world_size(); ++r) ranks.push_back(r);
  const Placement p("cpu", ranks, {int64_t(ranks.size() / 2), 2});
  manual_seed(6);
  const Tensor full = randn({8, 6});
  const Tensor x = from_full(full, p, NdSbp({sbp::broadcast, sbp::broadcast}));
  reset_boxing_paths();
  const Tensor y = x.to_global(p, NdSbp({sbp::split(0), sbp::split(0)}));  // nested: quarters of the rows
  testing::expect_same_values(y.to_local(), testing::expected_shard(full, p, y.sbp(), dist::world_rank()), "values");
  // Only local slices (B -> S(0)) on the axes of more than one rank: no gather, no fallback.
  ASSERT_EQ(boxing_paths().size(), 1u);
  const std::string path = boxing_paths().front().first;
  EXPECT_EQ(path.find("fallback"), std::string::npos) << path;
  EXPECT_EQ(path.find("-> B"), std::string::npos) << path;
  if (p.mesh_shape()[0] > 1) {
    EXPECT_NE(path.find("0: B -> S(0), 1: B -> S(0)"), std::string::npos) << path;
  }
}

TEST(BoxingPaths, UnsqueezeKeepsTheSplitOfARowSplitTensor) {
  const Placement p = Placement::all();
  manual_seed(4);
  const Tensor full = randn({8, 6});
  const Tensor x = from_full(full, p, NdSbp({sbp::split(0)}));
  reset_boxing_paths();
  const Tensor y = unsqueeze(x, 0);  // [1, 8, 6]: the rows stay split, now on dim 1
  EXPECT_TRUE(boxing_paths().empty()) << boxing_paths().front().first;
  EXPECT_EQ(y.sbp().to_string(), dist::world_size() > 1 ? "(S(1))" : y.sbp().to_string());
  testing::expect_same_values(y.to_global(p, NdSbp({sbp::broadcast})).to_local(), unsqueeze(full, 0), "values");
}

}  // namespace
}  // namespace globe

namespace globe {
namespace {

// to_global's grad_sbp: the gradient arrives in the layout asked for. A column-split product
// gives its input a partial-sum gradient; asking for broadcast all-reduces it right there, so the
// ops before see (and pass on) a broadcast gradient.
TEST(GradSbp, TheGradientTakesTheLayoutAskedFor) {
  const Placement p = Placement::all();
  manual_seed(5);
  const Tensor w = from_full(randn({6, 8}), p, NdSbp({sbp::split(1)}));
  for (bool ask : {false, true}) {
    Tensor x = from_full(randn({4, 6}), p, NdSbp({sbp::broadcast}));
    x.set_requires_grad(true);
    const Tensor a = mul(x, 2.0);
    const Tensor in = ask ? a.to_global(p, NdSbp({sbp::broadcast}), NdSbp({sbp::broadcast})) : a;
    sum(matmul(in, w)).backward();
    const Tensor raw(x.impl().grad);  // before grad() settles a deferred reduction
    const bool partial = dist::world_size() > 1 && !ask;
    EXPECT_EQ(raw.sbp().to_string(), partial ? "(P)" : "(B)") << (ask ? "with" : "without") << " grad_sbp";
    // Either way the value is 2 * (ones @ w^T).
    const Tensor want = mul(matmul(ones({4, 8}), transpose(w.to_global(p, NdSbp({sbp::broadcast})).to_local(), 0, 1)), 2.0);
    const auto got = x.grad().to_local().to_vector<float>(), expected = want.to_vector<float>();
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5) << i;  // summation order differs
  }
}

}  // namespace
}  // namespace globe
