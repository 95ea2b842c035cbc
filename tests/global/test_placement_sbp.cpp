// Placements (docs/design.md §1) and SBP arithmetic (docs/design.md §2): equality and hashing with the written order
// kept, mesh helpers, the validation errors, the balanced split rule and N-D blocks. Runs with 1
// process and under globe-launch with 2 and 4 ranks (cases needing more ranks skip).
#include <functional>
#include <unordered_set>

#include "global_test_util.h"

namespace globe {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Runs fn, which must throw globe::Error; returns the message ("" and a failure otherwise).
std::string error_of(const std::function<void()>& fn, const std::string& what) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw a non-globe exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << what << ": did not throw";
  return "";
}

// The error starts with `prefix` and contains every one of `parts`.
void expect_error(const std::function<void()>& fn, const std::string& prefix, const std::vector<std::string>& parts,
                  const std::string& what) {
  const std::string msg = error_of(fn, what);
  if (msg.empty()) return;
  EXPECT_TRUE(starts_with(msg, prefix)) << what << ": message does not start with " << prefix << ": " << msg;
  for (const std::string& p : parts) EXPECT_TRUE(contains(msg, p)) << what << ": message lacks '" << p << "': " << msg;
}

int world() { return dist::world_size(); }

// ---- equality, hash, order ----------------------------------------------------------------------

// The one record of tensor metadata ranks exchange (to_global's shape gather, the pipeline's
// header): what goes in comes out, a zero row reads as absent, and the dims limit is the tensors'.
TEST(MetaWire, RoundTripsAndRefusesPastTheLimits) {
  const NdSbp sbp{sbp::split(1), sbp::partial_sum};
  const std::vector<int64_t> w = wire::encode(kInt32, {3, 0, 7}, sbp, "test");
  ASSERT_EQ(int64_t(w.size()), wire::kWords);
  const wire::Meta m = wire::decode(w.data());
  EXPECT_TRUE(m.present);
  EXPECT_EQ(m.dtype, kInt32);
  EXPECT_EQ(m.shape, (Shape{3, 0, 7}));
  EXPECT_EQ(m.sbp, sbp);
  const std::vector<int64_t> zero(size_t(wire::kWords), 0);
  EXPECT_FALSE(wire::decode(zero.data()).present);
  EXPECT_EQ(wire::decode(wire::encode(kFloat32, {}, NdSbp(), "test").data()).shape, Shape{});
  try {
    wire::encode(kFloat32, Shape(kMaxDims + 1, 2), NdSbp(), "pipeline");
    ADD_FAILURE() << "9 dims encoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[pipeline] a tensor of 9 dims"), std::string::npos) << e.what();
  }
}

TEST(Placement, SingleRankProperties) {
  const Placement p = placement("cpu", {0});
  EXPECT_EQ(p.device(), "cpu");
  EXPECT_EQ(p.ranks(), std::vector<int>{0});
  EXPECT_EQ(p.mesh_shape(), std::vector<int64_t>{1});
  EXPECT_EQ(p.mesh_ndim(), 1);
  EXPECT_EQ(p.size(), 1);
  EXPECT_TRUE(p.contains(0));
  EXPECT_FALSE(p.contains(1));
  EXPECT_EQ(p.index_of(0), 0);
  EXPECT_EQ(p.index_of(5), -1);
  EXPECT_EQ(p.index_of(-1), -1);
  EXPECT_EQ(p.first(), 0);
  EXPECT_EQ(p.to_string(), "placement(cpu, [0])");
  EXPECT_EQ(p, placement("cpu", std::vector<int>{0}));
  EXPECT_EQ(p.hash(), placement("cpu", std::vector<int>{0}).hash());
  EXPECT_EQ(std::hash<Placement>()(p), p.hash());
}

TEST(Placement, AllIsEveryRankInOrder) {
  const Placement p = Placement::all();
  EXPECT_EQ(p.ranks(), testing::first_ranks(world()));
  EXPECT_EQ(p.mesh_shape(), std::vector<int64_t>{world()});
  EXPECT_EQ(p, Placement::all("cpu"));
  for (int r = 0; r < world(); ++r) EXPECT_TRUE(p.contains(r));
}

TEST(Placement, OrderIsKeptAndMatters) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Placement a = placement("cpu", {0, 1}), b = placement("cpu", {1, 0});
  EXPECT_NE(a, b);
  EXPECT_FALSE(a == b);
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_EQ(b.ranks(), (std::vector<int>{1, 0}));  // not sorted
  EXPECT_EQ(b.first(), 1);
  EXPECT_EQ(b.index_of(1), 0);
  EXPECT_EQ(b.index_of(0), 1);
  EXPECT_EQ(b.to_string(), "placement(cpu, [1, 0])");
  EXPECT_EQ(a, placement("cpu", std::vector<int>{0, 1}));
  EXPECT_EQ(a.hash(), placement("cpu", std::vector<int>{0, 1}).hash());
  // Same ranks, different mesh: different placements.
  const Placement row = placement("cpu", {{0, 1}}), col = placement("cpu", {{0}, {1}});
  EXPECT_NE(row, a);
  EXPECT_NE(row, col);
  EXPECT_EQ(row.mesh_shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(col.mesh_shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(row.to_string(), "placement(cpu, [[0, 1]])");
  EXPECT_EQ(col.to_string(), "placement(cpu, [[0], [1]])");
  // Usable as a hash-set key: equal placements collapse, the others stay apart.
  std::unordered_set<Placement> set = {a, b, row, col, placement("cpu", {0, 1}), placement("cpu", {{0}, {1}})};
  EXPECT_EQ(set.size(), 4u);
  EXPECT_EQ(set.count(placement("cpu", {1, 0})), 1u);
}

TEST(Placement, TwoDimensionalMesh) {
  if (world() < 4) GTEST_SKIP() << "needs 4 ranks";
  // Written order kept: mesh coordinate (i, j) is the rank written there.
  const Placement p = placement("cpu", {{3, 1}, {0, 2}});
  EXPECT_EQ(p.mesh_shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(p.mesh_ndim(), 2);
  EXPECT_EQ(p.ranks(), (std::vector<int>{3, 1, 0, 2}));
  EXPECT_EQ(p.first(), 3);
  EXPECT_EQ(p.to_string(), "placement(cpu, [[3, 1], [0, 2]])");
  EXPECT_EQ(p.coord_of(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(p.coord_of(1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p.coord_of(2), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(p.coord_of(3), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(p.coord_of(p.index_of(0)), (std::vector<int64_t>{1, 0}));
  // axis_group: members sharing every coordinate but `axis`, ordered along it.
  EXPECT_EQ(p.axis_group(3, 0), (std::vector<int>{3, 0}));  // column 0
  EXPECT_EQ(p.axis_group(0, 0), (std::vector<int>{3, 0}));
  EXPECT_EQ(p.axis_group(1, 0), (std::vector<int>{1, 2}));  // column 1
  EXPECT_EQ(p.axis_group(3, 1), (std::vector<int>{3, 1}));  // row 0
  EXPECT_EQ(p.axis_group(2, 1), (std::vector<int>{0, 2}));  // row 1
  const Placement q = placement("cpu", {{0, 1}, {2, 3}});
  EXPECT_NE(p, q);
  EXPECT_NE(p.hash(), q.hash());
  EXPECT_EQ(q, placement("cpu", {{0, 1}, {2, 3}}));
  EXPECT_NE(q, placement("cpu", {0, 1, 2, 3}));  // same ranks, 1-D mesh
  // A 1x4 and a 4x1 mesh.
  EXPECT_EQ(placement("cpu", {{0, 1, 2, 3}}).axis_group(2, 1), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(placement("cpu", {{0, 1, 2, 3}}).axis_group(2, 0), (std::vector<int>{2}));
  EXPECT_EQ(placement("cpu", {{0}, {1}, {2}, {3}}).coord_of(3), (std::vector<int64_t>{3, 0}));
  // The general constructor: a 1x2x2 mesh.
  const Placement r("cpu", {0, 1, 2, 3}, {1, 2, 2});
  EXPECT_EQ(r.coord_of(3), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(r.axis_group(1, 1), (std::vector<int>{1, 3}));
  EXPECT_EQ(r.to_string(), "placement(cpu, [[[0, 1], [2, 3]]])");
  // axes_group: several axes at once, row-major over them (a data-parallel reduction over both).
  EXPECT_EQ(p.axes_group(2, {0, 1}), (std::vector<int>{3, 1, 0, 2}));
  EXPECT_EQ(p.axes_group(2, {1}), p.axis_group(2, 1));
  EXPECT_EQ(p.axes_group(1, {}), (std::vector<int>{1}));
  EXPECT_EQ(r.axes_group(3, {0, 2}), (std::vector<int>{2, 3}));
  EXPECT_EQ(r.axes_group(0, {1, 2}), (std::vector<int>{0, 1, 2, 3}));
}

TEST(Placement, MeshPlacementOfAnyDimensions) {
  // Consecutive ranks, row-major, any number of mesh dimensions (needs first_rank + numel ranks).
  const int n = world();
  EXPECT_EQ(mesh_placement("cpu", {int64_t(n)}), Placement::all());
  if (n >= 4) {
    const Placement p = mesh_placement("cpu", {1, 2, 2});
    EXPECT_EQ(p, Placement("cpu", {0, 1, 2, 3}, {1, 2, 2}));
    EXPECT_EQ(p.to_string(), "placement(cpu, [[[0, 1], [2, 3]]])");
    EXPECT_EQ(p.axis_group(3, 1), (std::vector<int>{1, 3}));
    EXPECT_EQ(mesh_placement("cpu", {2, 1, 1, 1}, 2).ranks(), (std::vector<int>{2, 3}));
    EXPECT_EQ(mesh_placement("cpu", {2, 2}), placement("cpu", {{0, 1}, {2, 3}}));
  }
}

// ---- errors -------------------------------------------------------------------------------------

TEST(PlacementErrors, Empty) {
  expect_error([] { placement("cpu", std::vector<int>{}); }, "[placement]", {"placement(cpu, [])", "empty"},
               "empty placement");
}

TEST(PlacementErrors, DuplicateRank) {
  expect_error([] { placement("cpu", {0, 0}); }, "[placement]", {"rank 0 appears twice", "placement(cpu, [0, 0])"},
               "duplicate");
  if (world() >= 4)
    expect_error([] { placement("cpu", {{0, 1}, {2, 1}}); }, "[placement]",
                 {"rank 1 appears twice", "placement(cpu, [[0, 1], [2, 1]])"}, "duplicate 2-D");
}

TEST(PlacementErrors, RankOutsideWorld) {
  const int n = world();
  const std::string bad = std::to_string(n);
  std::vector<int> ranks = testing::first_ranks(n);
  ranks.push_back(n);
  std::string written = "placement(cpu, [";
  for (size_t i = 0; i < ranks.size(); ++i) written += (i ? ", " : "") + std::to_string(ranks[i]);
  written += "])";
  std::vector<std::string> parts = {written, "rank " + bad, "world has " + std::to_string(n)};
  // Started directly, the message tells how to start several ranks.
  if (n == 1) parts.push_back("globe-launch --nproc_per_node");
  expect_error([&] { placement("cpu", ranks); }, "[placement]", parts, "rank >= world size");
  if (n > 1) {
    const std::string msg = error_of([&] { placement("cpu", ranks); }, "rank >= world size");
    EXPECT_FALSE(contains(msg, "globe-launch")) << "launched with " << n << " ranks: " << msg;
  }
  expect_error([] { placement("cpu", {-1}); }, "[placement]", {"negative rank -1", "placement(cpu, [-1])"},
               "negative");
}

TEST(PlacementErrors, RaggedNesting) {
  expect_error([] { placement("cpu", {{0, 1}, {2}}); }, "[placement]", {"ragged", "[[0, 1], [2]]"}, "ragged");
  expect_error([] { placement("cpu", {{0}, {1, 2}}); }, "[placement]", {"ragged", "[[0], [1, 2]]"}, "ragged 2");
  // The general constructor: a mesh that does not hold the ranks.
  expect_error([] { Placement("cpu", {0}, {2, 1}); }, "[placement]", {"mesh [2, 1]", "[0]"}, "mesh mismatch");
}

TEST(PlacementErrors, BadMeshShape) {
  expect_error([] { mesh_placement("cpu", {2, 0}); }, "[placement]",
               {"mesh_placement(cpu, [2, 0])", "every mesh dimension must be at least 1"}, "zero dim");
  expect_error([] { mesh_placement("cpu", {}); }, "[placement]", {"at least one dimension"}, "no dims");
  expect_error([] { mesh_placement("cpu", {1}, -1); }, "[placement]", {"first rank -1"}, "negative first");
  const int n = world();
  expect_error([&] { mesh_placement("cpu", {int64_t(n), 2}); }, "[placement]",
               {"rank " + std::to_string(n), "world has " + std::to_string(n)}, "beyond the world");
  // Layouts are held inline (NdSbp::kMaxMeshAxes): a mesh of more axes is refused by name.
  EXPECT_NO_THROW(mesh_placement("cpu", Shape(8, 1)));
  expect_error([] { mesh_placement("cpu", Shape(9, 1)); }, "[placement]",
               {"has a mesh of 9 axes: at most 8 are supported"}, "nine axes");
  expect_error([] { NdSbp(std::vector<Sbp>(9, sbp::broadcast)); }, "[sbp]",
               {"a layout of 9 mesh axes: at most 8 are supported"}, "nine layout axes");
}

TEST(PlacementErrors, UnknownDevice) {
  for (const std::string dev : {"tpu", "gpu"})
    expect_error([&] { placement(dev, {0}); }, "[placement]",
                 {"unknown device type '" + dev + "' (supported: cpu, cuda, sim)", "placement(" + dev + ", [0])"},
                 "device " + dev);
}

// "cuda" is a device type; without a GPU every rank says what is missing (tests/device has the rest).
TEST(PlacementErrors, CudaWithoutAGpuSaysWhatIsMissing) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is visible";
  expect_error([&] { placement("cuda", {0}); }, "[placement] placement(cuda, [0]) on rank " + std::to_string(dist::world_rank()),
               {cuda_built() ? "no CUDA device visible" : "this build has no CUDA"}, "device cuda");
}

// ---- SBP ------------------------------------------------------------------------------------------

TEST(Sbp, NamesAndEquality) {
  EXPECT_EQ(sbp::split(1).to_string(), "S(1)");
  EXPECT_EQ(sbp::broadcast.to_string(), "B");
  EXPECT_EQ(sbp::partial_sum.to_string(), "P");
  EXPECT_EQ(sbp::split(0), sbp::split(0));
  EXPECT_NE(sbp::split(0), sbp::split(1));
  EXPECT_NE(sbp::split(0), sbp::broadcast);
  EXPECT_NE(sbp::broadcast, sbp::partial_sum);
  EXPECT_EQ(NdSbp(sbp::split(0)).size(), 1u);
  EXPECT_EQ((NdSbp{sbp::split(0), sbp::broadcast}).to_string(), "(S(0), B)");
  EXPECT_TRUE((NdSbp{sbp::broadcast, sbp::broadcast}).all_broadcast());
  EXPECT_FALSE((NdSbp{sbp::broadcast, sbp::split(0)}).all_broadcast());
  EXPECT_TRUE((NdSbp{sbp::broadcast, sbp::partial_sum}).any_partial());
  EXPECT_FALSE((NdSbp{sbp::broadcast, sbp::split(1)}).any_partial());
}

TEST(Sbp, SplitRangeBalancedRule) {
  // part i has floor(n/p) + 1 elements if i < n mod p, else floor(n/p); parts are consecutive.
  auto check = [](int64_t n, int64_t parts, std::vector<int64_t> lengths) {
    int64_t at = 0;
    for (int64_t i = 0; i < parts; ++i) {
      const Range r = split_range(n, parts, i);
      EXPECT_EQ(r.start, at) << n << " over " << parts << " part " << i;
      EXPECT_EQ(r.length, lengths[i]) << n << " over " << parts << " part " << i;
      at += r.length;
    }
    EXPECT_EQ(at, n);
  };
  check(8, 2, {4, 4});
  check(5, 2, {3, 2});
  check(7, 4, {2, 2, 2, 1});
  check(10, 4, {3, 3, 2, 2});
  check(2, 4, {1, 1, 0, 0});  // n < parts: trailing parts empty
  check(1, 3, {1, 0, 0});
  check(0, 3, {0, 0, 0});
  check(5, 1, {5});
  // Empty parts start at n.
  EXPECT_EQ(split_range(2, 4, 3).start, 2);
  EXPECT_EQ(split_range(0, 2, 1).start, 0);
}

TEST(Sbp, BlockOfNestedSplits) {
  // 2x2 mesh, (S(0), S(0)) on [7, 5]: axis 0 splits 7 into 4 + 3, axis 1 splits each part again.
  const Shape shape = {7, 5};
  const std::vector<int64_t> mesh = {2, 2};
  const NdSbp ss = {sbp::split(0), sbp::split(0)};
  auto block = [&](const NdSbp& s, int64_t i, int64_t j) { return block_of(shape, mesh, s, {i, j}); };
  EXPECT_EQ(block(ss, 0, 0).start, (Shape{0, 0}));
  EXPECT_EQ(block(ss, 0, 0).shape, (Shape{2, 5}));
  EXPECT_EQ(block(ss, 0, 1).start, (Shape{2, 0}));
  EXPECT_EQ(block(ss, 0, 1).shape, (Shape{2, 5}));
  EXPECT_EQ(block(ss, 1, 0).start, (Shape{4, 0}));
  EXPECT_EQ(block(ss, 1, 0).shape, (Shape{2, 5}));
  EXPECT_EQ(block(ss, 1, 1).start, (Shape{6, 0}));
  EXPECT_EQ(block(ss, 1, 1).shape, (Shape{1, 5}));
  // (S(0), S(1)): rows by the first axis, columns by the second.
  const NdSbp s01 = {sbp::split(0), sbp::split(1)};
  EXPECT_EQ(block(s01, 1, 0).start, (Shape{4, 0}));
  EXPECT_EQ(block(s01, 1, 0).shape, (Shape{3, 3}));
  EXPECT_EQ(block(s01, 1, 1).start, (Shape{4, 3}));
  EXPECT_EQ(block(s01, 1, 1).shape, (Shape{3, 2}));
  // B and P axes do not cut.
  const NdSbp bs = {sbp::broadcast, sbp::split(1)};
  EXPECT_EQ(block(bs, 1, 1).start, (Shape{0, 3}));
  EXPECT_EQ(block(bs, 1, 1).shape, (Shape{7, 2}));
  const NdSbp ps = {sbp::partial_sum, sbp::broadcast};
  EXPECT_EQ(block(ps, 1, 0).shape, shape);
  // Nesting is not a flat split: 6 rows over (S(0), S(0)) are 3 -> (2, 1) and 3 -> (2, 1), i.e.
  // lengths 2, 1, 2, 1, where a flat 4-way split would give 2, 2, 1, 1.
  const std::vector<int64_t> lens = {block_of({6, 1}, mesh, ss, {0, 0}).shape[0], block_of({6, 1}, mesh, ss, {0, 1}).shape[0],
                                     block_of({6, 1}, mesh, ss, {1, 0}).shape[0], block_of({6, 1}, mesh, ss, {1, 1}).shape[0]};
  EXPECT_EQ(lens, (std::vector<int64_t>{2, 1, 2, 1}));
  EXPECT_EQ(block_of({6, 1}, mesh, ss, {1, 0}).start[0], 3);
  // A 3-D mesh, each axis splitting a different dim, one more split on dim 0.
  const Block b = block_of({4, 6, 5}, {2, 3, 2}, NdSbp{sbp::split(0), sbp::split(1), sbp::split(0)}, {1, 2, 1});
  EXPECT_EQ(b.start, (Shape{3, 4, 0}));  // dim 0: 4 -> part 1 = [2, 4), then part 1 of 2 = [3, 4)
  EXPECT_EQ(b.shape, (Shape{1, 2, 5}));
}

TEST(Sbp, NormalizeNegativeAxisAndErrors) {
  const NdSbp n = normalize_sbp(NdSbp{sbp::split(-1), sbp::broadcast}, 3, 2, "test");
  EXPECT_EQ(n[0], sbp::split(2));
  EXPECT_EQ(n[1], sbp::broadcast);
  EXPECT_EQ(normalize_sbp(sbp::split(-3), 3, 1, "test")[0], sbp::split(0));
  expect_error([] { normalize_sbp(sbp::split(2), 2, 1, "myop"); }, "[myop]", {"split dim 2", "2 dims", "S(2)"},
               "split dim too large");
  expect_error([] { normalize_sbp(sbp::split(-3), 2, 1, "myop"); }, "[myop]", {"split dim -3"},
               "split dim too negative");
  expect_error([] { normalize_sbp(NdSbp{sbp::split(0), sbp::broadcast}, 2, 1, "myop"); }, "[myop]",
               {"(S(0), B)", "2 entries", "1 axes"}, "too many entries");
  expect_error([] { normalize_sbp(sbp::broadcast, 2, 2, "myop"); }, "[myop]", {"1 entries", "2 axes"},
               "too few entries");
  // The same errors through the public API.
  const Placement p = Placement::all();
  expect_error([&] { randn({4, 3}, p, sbp::split(2)); }, "[", {"split dim 2"}, "randn split(2)");
  expect_error([&] { zeros({4, 3}, p, NdSbp{sbp::split(0), sbp::split(1)}); }, "[", {"2 entries", "1 axes"},
               "zeros 2 entries on a 1-D mesh");
  expect_error([&] { ones({4}, p, sbp::broadcast).to_global(p, sbp::split(1)); }, "[to_global]",
               {"split dim 1"}, "to_global split(1) of a 1-D tensor");
}

}  // namespace
}  // namespace globe
