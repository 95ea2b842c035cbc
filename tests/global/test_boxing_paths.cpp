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
