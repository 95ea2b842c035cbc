// Every 1-D boxing pair (docs/design.md §4) on even, uneven and tiny shapes, bit-exact against the
// single-process value, plus N-D meshes and moves between placements. Runs with 1, 2 and 4 ranks.
#include "global_test_util.h"

namespace globe {
namespace {

using testing::all_sbps;
using testing::expect_same_values;
using testing::expected_shard;

const std::vector<Shape> kShapes = {{8, 6}, {5, 3}, {1, 7}, {3, 1}, {2, 5, 3}};

// The global value of a layout created by randn: identical for every layout (docs/design.md §3).
Tensor reference(const Shape& shape, uint64_t seed) {
  manual_seed(seed);
  return randn(shape);
}

Tensor make(const Shape& shape, uint64_t seed, const Placement& p, const NdSbp& s) {
  manual_seed(seed);
  return randn(shape, p, s);
}

// Checks x holds `full`: its shard is the expected block (non-partial) and its value matches.
void check_holds(const Tensor& x, const Tensor& full, const std::string& what) {
  bool partial = x.sbp().any_partial();
  const int me = dist::world_rank();
  if (!partial && x.placement().contains(me))
    expect_same_values(x.to_local(), expected_shard(full, x.placement(), x.sbp(), me), what + " shard");
  if (!x.placement().contains(me)) {
    EXPECT_EQ(x.to_local().numel(), 0) << what << ": non-member holds data";
  }
  expect_same_values(from_vector(x.to_vector<double>(), x.shape()), to_dtype(full, kFloat64), what + " value");
}

TEST(Boxing, RandomCreationIsShardingInvariant) {
  const Placement p = Placement::all();
  for (const Shape& shape : kShapes)
    for (const Sbp& s : all_sbps(int64_t(shape.size()))) {
      Tensor x = make(shape, 7, p, s);
      check_holds(x, reference(shape, 7), "randn " + shape_str(shape) + " " + s.to_string());
    }
}

TEST(Boxing, EveryPairOnOnePlacement) {
  const Placement p = Placement::all();
  for (const Shape& shape : kShapes) {
    const Tensor full = reference(shape, 11);
    for (const Sbp& from : all_sbps(int64_t(shape.size())))
      for (const Sbp& to : all_sbps(int64_t(shape.size()))) {
        Tensor x = make(shape, 11, p, from);
        Tensor y = x.to_global(p, to);
        EXPECT_EQ(y.sbp(), NdSbp(to));
        check_holds(y, full, shape_str(shape) + " " + from.to_string() + " -> " + to.to_string());
        // The input is untouched.
        check_holds(x, full, "source after " + from.to_string() + " -> " + to.to_string());
      }
  }
}

TEST(Boxing, SameLayoutReturnsSameTensor) {
  Tensor x = randn({4, 4}, Placement::all(), sbp::split(0));
  EXPECT_TRUE(x.to_global(Placement::all(), sbp::split(0)).same(x));
  EXPECT_TRUE(x.to_global(sbp::split(0)).same(x));
}

TEST(Boxing, AcrossPlacements) {
  const int n = dist::world_size();
  std::vector<Placement> ps = {placement("cpu", {0}), Placement::all()};
  if (n >= 2) {
    ps.push_back(placement("cpu", {1}));
    ps.push_back(placement("cpu", {1, 0}));  // order kept: mesh position 0 is rank 1
  }
  if (n >= 4) {
    ps.push_back(placement("cpu", {2, 3}));
    ps.push_back(placement("cpu", {1, 2, 3}));
    ps.push_back(placement("cpu", {3, 0, 2}));
  }
  for (const Shape& shape : {Shape{7, 4}, Shape{2, 3}}) {
    const Tensor full = reference(shape, 5);
    for (const Placement& sp : ps)
      for (const Placement& dp : ps)
        for (const Sbp& from : all_sbps(2))
          for (const Sbp& to : all_sbps(2)) {
            Tensor y = make(shape, 5, sp, from).to_global(dp, to);
            ASSERT_EQ(y.placement(), dp);
            check_holds(y, full, sp.to_string() + " " + from.to_string() + " -> " + dp.to_string() + " " +
                                     to.to_string());
          }
  }
}

TEST(Boxing, TwoDimensionalMesh) {
  if (dist::world_size() != 4) GTEST_SKIP() << "needs 4 ranks";
  const Placement p = placement("cpu", {{0, 1}, {2, 3}});
  const Placement q = placement("cpu", {{3, 2}, {1, 0}});
  std::vector<NdSbp> layouts;
  for (const Sbp& a : all_sbps(2))
    for (const Sbp& b : all_sbps(2)) layouts.push_back({a, b});
  for (const Shape& shape : {Shape{6, 5}, Shape{3, 2}}) {
    const Tensor full = reference(shape, 3);
    for (const NdSbp& from : layouts)
      for (const NdSbp& to : layouts) {
        Tensor y = make(shape, 3, p, from).to_global(p, to);
        check_holds(y, full, shape_str(shape) + " " + from.to_string() + " -> " + to.to_string());
      }
    for (const NdSbp& from : layouts) {
      Tensor y = make(shape, 3, p, from).to_global(q, NdSbp{sbp::split(1), sbp::split(0)});
      check_holds(y, full, "mesh move " + from.to_string());
    }
  }
}

TEST(Boxing, LargeTensorsTakeTheRingAllReduce) {
  // Above 256 KiB all-reduce runs as a ring of point-to-point steps; odd sizes give uneven chunks.
  const Placement p = Placement::all();
  for (DType dt : {kFloat32, kFloat64}) {
    manual_seed(21);
    const Tensor full = randn({257, 1031}, dt);
    manual_seed(21);
    Tensor x = randn({257, 1031}, p, sbp::partial_sum, dt);
    check_holds(x.to_global(p, sbp::broadcast), full, std::string("P -> B ") + dtype_name(dt));
    // Every rank holding a summand: the sum of (r + 1) * full over the ranks.
    const int n = dist::world_size();
    const Tensor mine = mul(full, double(dist::world_rank() + 1));
    Tensor summed = make_global(mine, full.shape(), p, sbp::partial_sum).to_global(p, sbp::broadcast);
    const auto got = summed.to_local().to_vector<double>(), base = full.to_vector<double>();
    const double factor = n * (n + 1) / 2.0;
    for (size_t i = 0; i < got.size(); i += 997) EXPECT_NEAR(got[i], factor * base[i], 1e-4 * (1 + std::abs(base[i])));
  }
}

TEST(Boxing, OneRankToOneRank) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Tensor full = reference({16, 16}, 9);
  Tensor x = make({16, 16}, 9, placement("cpu", {0}), sbp::broadcast);
  Tensor y = x.to_global(placement("cpu", {1}), sbp::broadcast);
  check_holds(y, full, "0 -> 1");
  Tensor z = y.to_global(placement("cpu", {0}), sbp::split(1));
  check_holds(z, full, "1 -> 0");
}

}  // namespace
}  // namespace globe
