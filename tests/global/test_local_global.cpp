// Local <-> global (docs/design.md §3, §6): local.to_global(placement, sbp) for split / broadcast /
// partial_sum with uneven shards, its checks, round trips, the gradients of to_local() and
// to_global(), creation with a layout, and visualize(). Runs with 1 process and under globe-launch
// with 2 and 4 ranks.
#include <functional>
#include <sstream>

#include "global_test_util.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::error_of;
using testing::me;
using testing::world;

using testing::expect_same_values;
using testing::expected_shard;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }


// A [rows, cols] float64 tensor whose element (i, j) is 100 * (row0 + i) + j + offset.
Tensor rows_from(int64_t row0, int64_t rows, int64_t cols, double offset = 0) {
  std::vector<double> v;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) v.push_back(100.0 * double(row0 + i) + double(j) + offset);
  return from_vector(v, {rows, cols});
}

// The whole value of a global tensor as a local tensor (collective).
Tensor value_of(const Tensor& g) { return from_vector(g.to_vector<double>(), g.shape()); }

// ---- local -> global -------------------------------------------------------------------------------

TEST(LocalToGlobal, SplitRowsUneven) {
  // 2n + 1 rows over n ranks: the balanced pattern gives rank 0 three rows, the others two.
  const int n = world();
  const int64_t rows = 2 * n + 1, cols = 3;
  const Range mine = split_range(rows, n, me());
  Tensor local = rows_from(mine.start, mine.length, cols);
  Tensor g = local.to_global(Placement::all(), sbp::split(0));
  ASSERT_TRUE(g.is_global());
  EXPECT_EQ(g.shape(), (Shape{rows, cols}));
  EXPECT_EQ(g.sbp(), NdSbp(sbp::split(0)));
  EXPECT_EQ(g.dtype(), kFloat64);
  expect_same_values(value_of(g), rows_from(0, rows, cols), "concatenation along 0");
  expect_same_values(g.to_local(), local, "shard is the local tensor");
}

TEST(LocalToGlobal, SplitRowsRankRHoldsRPlusOne) {
  if (world() != 2) GTEST_SKIP() << "the pattern r + 1 rows is balanced for 2 ranks only (2 + 1 rows)";
  // 3 rows over 2 ranks = 2 + 1 — and 5 rows = 3 + 2.
  for (int64_t total : {3, 5}) {
    const Range mine = split_range(total, 2, me());
    Tensor g = rows_from(mine.start, mine.length, 4).to_global(Placement::all(), sbp::split(0));
    EXPECT_EQ(g.shape(), (Shape{total, 4}));
    expect_same_values(value_of(g), rows_from(0, total, 4), "rows " + std::to_string(total));
  }
}

TEST(LocalToGlobal, SplitColumnsUneven) {
  const int n = world();
  const int64_t cols = 3 * n - 1;  // uneven for n > 1
  const Range mine = split_range(cols, n, me());
  Tensor full = rows_from(0, 2, cols);
  Tensor local = contiguous(narrow(full, 1, mine.start, mine.length));
  Tensor g = local.to_global(Placement::all(), sbp::split(1));
  EXPECT_EQ(g.shape(), (Shape{2, cols}));
  expect_same_values(value_of(g), full, "concatenation along 1");
  // Negative axis: the same.
  Tensor h = local.to_global(Placement::all(), sbp::split(-1));
  EXPECT_EQ(h.sbp(), NdSbp(sbp::split(1)));
  expect_same_values(value_of(h), full, "split(-1)");
}

TEST(LocalToGlobal, SplitFewerRowsThanRanks) {
  if (world() < 4) GTEST_SKIP() << "needs 4 ranks";
  // 2 rows over 4 ranks: ranks 2 and 3 hold empty [0, 3] shards.
  const Range mine = split_range(2, 4, me());
  Tensor g = rows_from(mine.start, mine.length, 3).to_global(Placement::all(), sbp::split(0));
  EXPECT_EQ(g.shape(), (Shape{2, 3}));
  expect_same_values(value_of(g), rows_from(0, 2, 3), "2 rows over 4 ranks");
}

TEST(LocalToGlobal, BroadcastTakesFirstRankAndNeverMutates) {
  // Every rank passes a different value; the global value is the first mesh rank's.
  Tensor local = rows_from(0, 3, 2, 1000.0 * me());
  const std::vector<double> before = local.to_vector<double>();
  Tensor g = local.to_global(Placement::all(), sbp::broadcast);
  EXPECT_EQ(g.shape(), (Shape{3, 2}));
  expect_same_values(value_of(g), rows_from(0, 3, 2, 0.0), "value is rank 0's");
  expect_same_values(g.to_local(), rows_from(0, 3, 2, 0.0), "every shard is rank 0's value");
  EXPECT_EQ(local.to_vector<double>(), before) << "the caller's local tensor was mutated";
  if (world() >= 2) {
    // Placement order decides which rank is first: [1, 0] takes rank 1's value.
    Tensor h = local.to_global(placement("cpu", {1, 0}), sbp::broadcast);
    expect_same_values(value_of(h), rows_from(0, 3, 2, 1000.0), "value is rank 1's");
    EXPECT_EQ(local.to_vector<double>(), before) << "the caller's local tensor was mutated";
  }
}

TEST(LocalToGlobal, TheGlobalTensorOwnsItsData) {
  // Updating the global shard in place (as an optimizer does) leaves the caller's local tensor.
  Tensor local = full({3, 2}, 1.0);
  Tensor g = local.to_global(Placement::all(), sbp::split(0));
  Tensor shard = g.to_local();
  copy_(shard, full({3, 2}, 5.0));
  for (double v : local.to_vector<double>()) EXPECT_EQ(v, 1.0);
  for (double v : g.to_local().to_vector<double>()) EXPECT_EQ(v, 5.0);
}

TEST(LocalToGlobal, PartialSumSums) {
  Tensor local = rows_from(0, 2, 3, double(me()));
  Tensor g = local.to_global(Placement::all(), sbp::partial_sum);
  EXPECT_EQ(g.sbp(), NdSbp(sbp::partial_sum));
  const int n = world();
  // sum over r of (x + r) = n x + n(n-1)/2
  Tensor want = add(mul(rows_from(0, 2, 3), double(n)), double(n * (n - 1) / 2));
  expect_same_values(value_of(g), want, "sum of the ranks' summands");
  expect_same_values(value_of(g.to_global(sbp::broadcast)), want, "P -> B");
}

TEST(LocalToGlobal, Int64AndFloat32) {
  const Range mine = split_range(5, world(), me());
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < mine.length; ++i) idx.push_back(mine.start + i);
  Tensor li = from_vector(idx, {mine.length});
  Tensor gi = li.to_global(Placement::all(), sbp::split(0));
  EXPECT_EQ(gi.dtype(), kInt64);
  EXPECT_EQ(gi.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  Tensor lf = full({2}, 0.5 + me(), kFloat32);
  Tensor gf = lf.to_global(Placement::all(), sbp::partial_sum);
  const int n = world();
  const float want = 0.5f * n + float(n * (n - 1) / 2);
  EXPECT_EQ(gf.to_vector<float>(), (std::vector<float>{want, want}));
}

TEST(LocalToGlobal, RankOutsidePlacement) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Only rank 1 is in the placement; the others pass a tensor of the same shape (its values are
  // ignored: they take their shape from it without talking to rank 1) and get an empty shard.
  Tensor local = me() == 1 ? rows_from(0, 3, 2) : rows_from(0, 3, 2, -1);
  Tensor g = local.to_global(placement("cpu", {1}), sbp::split(0));
  EXPECT_EQ(g.shape(), (Shape{3, 2}));
  if (me() != 1) {
    EXPECT_EQ(g.to_local().shape(), (Shape{0, 0}));
  }
  expect_same_values(value_of(g), rows_from(0, 3, 2), "value held by rank 1 only");
  if (world() >= 4) {
    // A sub-mesh of two ranks, written in reverse.
    const Placement p = placement("cpu", {3, 1});
    const int idx = p.index_of(me());
    Tensor l2 = idx >= 0 ? rows_from(2 * idx, 2, 2) : zeros({2, 2}, kFloat64);
    Tensor g2 = l2.to_global(p, sbp::split(0));
    EXPECT_EQ(g2.shape(), (Shape{4, 2}));
    expect_same_values(value_of(g2), rows_from(0, 4, 2), "rank 3's rows first");
  }
}

TEST(LocalToGlobal, RankOutsidePlacementWithAnotherShapeIsAnErrorNotAWrongValue) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Rank 0 is outside and passes 7 x 5 where rank 1's shard is 3 x 2: rank 0 believes the global
  // shape is 7 x 5. The first op that involves both says so on both ranks.
  Tensor local = me() == 1 ? rows_from(0, 3, 2) : rows_from(0, 7, 5, -1);
  Tensor g = local.to_global(placement("cpu", {1}), sbp::split(0));
  const std::string msg = error_of([&] { value_of(g); });
  EXPECT_NE(msg.find("diverged"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[7, 5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
}

TEST(LocalToGlobal, RankOutsidePlacementWithAnotherShapeWithoutConsistencyModeIsAnErrorToo) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Without consistency mode the receive itself notices: the peer sent 6 elements, not 35.
  const bool was = dist::consistency_checks();
  dist::set_consistency_checks(false);
  Tensor local = me() == 1 ? rows_from(0, 3, 2) : rows_from(0, 7, 5, -1);
  Tensor g = local.to_global(placement("cpu", {1}), sbp::split(0));
  Tensor moved;
  const std::string msg = me() == 0 ? error_of([&] { moved = g.to_global(placement("cpu", {0})); }) : std::string();
  if (me() != 0) g.to_global(placement("cpu", {0}));  // rank 1 sends its 3 x 2 shard; others take no part
  dist::set_consistency_checks(was);
  if (me() == 0) {
    EXPECT_NE(msg.find("the peer sent 6 elements where 35"), std::string::npos) << msg;
    EXPECT_FALSE(moved.defined());
  }
}

TEST(LocalToGlobal, ShapesNotFittingTheBalancedPatternNameRanksAndShapes) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Rank 0 has 2 rows, rank 1 has 3 (and any others 2): 3 rows cannot come after 2 in a balanced split.
  const int64_t rows = me() == 1 ? 3 : 2;
  const std::string msg = error_of([&] { rows_from(0, rows, 3).to_global(Placement::all(), sbp::split(0)); });
  EXPECT_EQ(msg.rfind("[to_global]", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "rank 0 has float64[2, 3]")) << msg;
  EXPECT_TRUE(contains(msg, "rank 1 has float64[3, 3]")) << msg;
  EXPECT_TRUE(contains(msg, "S(0)")) << msg;
  // Other dims differing is an error too.
  const std::string msg2 =
      error_of([&] { rows_from(0, 2, me() == 1 ? 4 : 3).to_global(Placement::all(), sbp::split(0)); });
  EXPECT_TRUE(contains(msg2, "rank 1 has float64[2, 4]")) << msg2;
  // B and P need equal shapes.
  const std::string msg3 =
      error_of([&] { rows_from(0, me() == 1 ? 3 : 2, 2).to_global(Placement::all(), sbp::broadcast); });
  EXPECT_TRUE(contains(msg3, "rank 1 has float64[3, 2]")) << msg3;
  EXPECT_TRUE(contains(msg3, "float64[2, 2]")) << msg3;
  // The communicators are still usable afterwards.
  Tensor g = rows_from(0, 1, 2, me()).to_global(Placement::all(), sbp::partial_sum);
  EXPECT_EQ(g.to_vector<double>()[1], 1.0 * world() + double(world() * (world() - 1) / 2));
}

TEST(LocalToGlobal, DtypeMismatchIsAnError) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  const std::string msg = error_of([&] {
    Tensor local = me() == 1 ? ones({2, 3}, kFloat32) : ones({2, 3}, kFloat64);
    local.to_global(Placement::all(), sbp::split(0));
  });
  EXPECT_EQ(msg.rfind("[to_global]", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "rank 1 has float32[2, 3]")) << msg;
  EXPECT_TRUE(contains(msg, "float64")) << msg;
}

TEST(LocalToGlobal, RoundTrips) {
  const Placement p = Placement::all();
  const Shape shape = {2 * world() + 1, 3};
  manual_seed(21);
  const Tensor full = randn(shape, kFloat64);
  for (const Sbp& s : testing::all_sbps(2)) {
    manual_seed(21);
    Tensor g = randn(shape, p, s, kFloat64);
    Tensor back = g.to_local().to_global(p, s);
    EXPECT_EQ(back.shape(), shape) << s.to_string();
    EXPECT_EQ(back.sbp(), NdSbp(s));
    expect_same_values(value_of(back), full, "round trip " + s.to_string());
    expect_same_values(back.to_local(), g.to_local(), "shard after round trip " + s.to_string());
  }
  if (world() == 4) {
    const Placement m = placement("cpu", {{0, 1}, {2, 3}});
    for (const NdSbp& s : {NdSbp{sbp::split(0), sbp::split(1)}, NdSbp{sbp::split(0), sbp::split(0)},
                           NdSbp{sbp::broadcast, sbp::split(1)}, NdSbp{sbp::partial_sum, sbp::split(0)}}) {
      manual_seed(21);
      Tensor g = randn({7, 5}, m, s, kFloat64);
      manual_seed(21);
      const Tensor f = randn({7, 5}, kFloat64);
      expect_same_values(value_of(g.to_local().to_global(m, s)), f, "2-D round trip " + s.to_string());
    }
  }
}

// ---- gradients ----------------------------------------------------------------------------------

TEST(LocalGlobalGrad, ToLocalOfBroadcastGivesPartialGradient) {
  // Every rank sums its own full copy: the logical loss counts the value once per rank, so the
  // gradient of the B leaf is n everywhere.
  Tensor x = randn({3, 2}, Placement::all(), sbp::broadcast).set_requires_grad();
  sum(x.to_local()).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().is_global());
  EXPECT_EQ(x.grad().sbp(), NdSbp(sbp::broadcast));
  EXPECT_EQ(x.grad().to_vector<double>(), std::vector<double>(6, double(world())));
}

TEST(LocalGlobalGrad, ToLocalOfSplitGivesOnes) {
  Tensor x = randn({2 * world() + 1, 2}, Placement::all(), sbp::split(0)).set_requires_grad();
  sum(mul(x.to_local(), 3.0)).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().sbp(), NdSbp(sbp::split(0)));
  EXPECT_EQ(x.grad().to_vector<double>(), std::vector<double>(size_t(2 * (2 * world() + 1)), 3.0));
}

TEST(LocalGlobalGrad, ToGlobalBackwardToBroadcastLeaf) {
  Tensor x = randn({2 * world() + 1, 3}, Placement::all(), sbp::broadcast).set_requires_grad();
  Tensor y = x.to_global(sbp::split(0));
  sum(y).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().sbp(), NdSbp(sbp::broadcast));
  EXPECT_EQ(x.grad().to_vector<double>(), std::vector<double>(size_t(3 * (2 * world() + 1)), 1.0));
}

TEST(LocalGlobalGrad, LocalToGlobalBackward) {
  const int n = world();
  // split: each rank's local gradient is its own rows.
  {
    const Range mine = split_range(2 * n + 1, n, me());
    Tensor local = rows_from(mine.start, mine.length, 2).set_requires_grad();
    Tensor g = local.to_global(Placement::all(), sbp::split(0));
    sum(mul(g, g)).backward();  // d/dx = 2x
    ASSERT_TRUE(local.grad().defined());
    EXPECT_FALSE(local.grad().is_global());
    expect_same_values(local.grad(), mul(local.detach(), 2.0), "split: 2x on my rows");
  }
  // broadcast: only the first rank's value is used, so only it gets a gradient.
  {
    Tensor local = rows_from(0, 2, 2, me()).set_requires_grad();
    sum(local.to_global(Placement::all(), sbp::broadcast)).backward();
    ASSERT_TRUE(local.grad().defined());
    EXPECT_EQ(local.grad().to_vector<double>(), std::vector<double>(4, me() == 0 ? 1.0 : 0.0));
  }
  // partial_sum: every summand gets the full gradient.
  {
    Tensor local = rows_from(0, 2, 2, me()).set_requires_grad();
    sum(local.to_global(Placement::all(), sbp::partial_sum)).backward();
    ASSERT_TRUE(local.grad().defined());
    EXPECT_EQ(local.grad().to_vector<double>(), std::vector<double>(4, 1.0));
  }
}

// ---- creation with a layout -----------------------------------------------------------------------

TEST(GlobalCreation, ShardingInvariantValues) {
  const Placement p = Placement::all();
  const Shape shape = {2 * world() + 1, 3};
  std::vector<NdSbp> layouts;
  for (const Sbp& s : testing::all_sbps(2)) layouts.push_back(s);
  if (world() == 4) {
    // On a 2x2 mesh as well.
    for (const NdSbp& s : {NdSbp{sbp::split(0), sbp::split(1)}, NdSbp{sbp::split(1), sbp::partial_sum},
                           NdSbp{sbp::broadcast, sbp::split(0)}})
      layouts.push_back(s);
  }
  for (const NdSbp& s : layouts) {
    const Placement& pl = s.size() == 2 ? placement("cpu", {{0, 1}, {2, 3}}) : p;
    const std::string what = s.to_string();
    struct Case {
      std::string name;
      std::function<Tensor()> global, local;
    };
    const std::vector<Case> cases = {
        {"zeros", [&] { return zeros(shape, pl, s); }, [&] { return zeros(shape); }},
        {"ones", [&] { return ones(shape, pl, s, kFloat64); }, [&] { return ones(shape, kFloat64); }},
        {"full", [&] { return full(shape, 2.5, pl, s); }, [&] { return full(shape, 2.5); }},
        {"rand", [&] { manual_seed(5); return rand(shape, pl, s); }, [&] { manual_seed(5); return rand(shape); }},
        {"randn", [&] { manual_seed(6); return randn(shape, pl, s, kFloat64); },
         [&] { manual_seed(6); return randn(shape, kFloat64); }},
    };
    for (const Case& c : cases) {
      Tensor g = c.global();
      const Tensor want = c.local();
      EXPECT_EQ(g.shape(), shape) << c.name << " " << what;
      EXPECT_EQ(g.dtype(), want.dtype()) << c.name << " " << what;
      EXPECT_EQ(g.to_vector<double>(), want.to_vector<double>()) << c.name << " " << what << ": value";
      if (pl.contains(me()) && !s.any_partial())
        expect_same_values(g.to_local(), expected_shard(want, pl, s, me()), c.name + " " + what + " shard");
    }
    // arange is 1-D.
    if (s.size() == 1 && (!s[0].is_split() || s[0].dim == 0)) {
      Tensor a = arange(2 * world() + 1, p, s);
      EXPECT_EQ(a.dtype(), kInt64);
      EXPECT_EQ(a.to_vector<int64_t>(), arange(2 * world() + 1).to_vector<int64_t>()) << "arange " << what;
    }
  }
  // P: the first rank holds the value, the others zeros (their sum is the value).
  Tensor o = ones({2, 2}, p, sbp::partial_sum);
  EXPECT_EQ(o.to_local().to_vector<double>(), std::vector<double>(4, me() == 0 ? 1.0 : 0.0));
  // A rank outside the placement holds an empty shard of the same rank.
  if (world() >= 2) {
    Tensor z = randn({3, 4}, placement("cpu", {1}), sbp::split(1));
    EXPECT_EQ(z.to_local().shape(), (me() == 1 ? Shape{3, 4} : Shape{0, 0}));
  }
}

// ---- visualize ----------------------------------------------------------------------------------

// The line of `text` that mentions "rank R ".
std::string line_of_rank(const std::string& text, int r) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (contains(line, "rank " + std::to_string(r) + " ")) return line;
  return "";
}

TEST(Visualize, OneDimensionalSplit) {
  if (world() != 2) GTEST_SKIP() << "the expected picture is for 2 ranks";
  const std::string v = visualize(zeros({5, 3}, Placement::all(), sbp::split(0)));
  EXPECT_TRUE(contains(v, "[5, 3]")) << v;
  EXPECT_TRUE(contains(v, "S(0)")) << v;
  const std::string r0 = line_of_rank(v, 0), r1 = line_of_rank(v, 1);
  EXPECT_TRUE(contains(r0, "0:3")) << v;
  EXPECT_FALSE(contains(r0, "3:5")) << v;
  EXPECT_TRUE(contains(r1, "3:5")) << v;
  // Columns are whole.
  EXPECT_TRUE(contains(r0, "0:3, 0:3")) << v;
  EXPECT_TRUE(contains(r1, "3:5, 0:3")) << v;
  // Partial sum is marked.
  const std::string vp = visualize(zeros({5, 3}, Placement::all(), sbp::partial_sum));
  EXPECT_TRUE(contains(line_of_rank(vp, 1), "partial")) << vp;
}

TEST(Visualize, TwoDimensionalMesh) {
  if (world() == 4) {
    const std::string v = visualize(zeros({5, 3}, placement("cpu", {{0, 1}, {2, 3}}), {sbp::split(0), sbp::split(1)}));
    EXPECT_TRUE(contains(line_of_rank(v, 0), "[0:3, 0:2]")) << v;
    EXPECT_TRUE(contains(line_of_rank(v, 1), "[0:3, 2:3]")) << v;
    EXPECT_TRUE(contains(line_of_rank(v, 2), "[3:5, 0:2]")) << v;
    EXPECT_TRUE(contains(line_of_rank(v, 3), "[3:5, 2:3]")) << v;
    EXPECT_TRUE(contains(line_of_rank(v, 2), "mesh [1, 0]")) << v;
  } else if (world() == 2) {
    const std::string v = visualize(zeros({5, 3}, placement("cpu", {{1, 0}}), {sbp::broadcast, sbp::split(1)}));
    EXPECT_TRUE(contains(line_of_rank(v, 1), "[0:5, 0:2]")) << v;  // rank 1 is at mesh (0, 0)
    EXPECT_TRUE(contains(line_of_rank(v, 0), "[0:5, 2:3]")) << v;
    EXPECT_TRUE(contains(line_of_rank(v, 0), "mesh [0, 1]")) << v;
  } else {
    GTEST_SKIP() << "needs 2 or 4 ranks";
  }
}

TEST(Visualize, ThreeDimensionalMeshAndTensor) {
  if (world() != 4) GTEST_SKIP() << "a 2 x 1 x 2 mesh of 4 ranks";
  const Placement p("cpu", {0, 1, 2, 3}, {2, 1, 2});
  // S(0) on axis 0, B on the one-rank axis 1, S(2) on axis 2 of a [4, 6, 5] tensor.
  const std::string v = visualize({4, 6, 5}, p, {sbp::split(0), sbp::broadcast, sbp::split(2)});
  EXPECT_TRUE(contains(v, "float32[4, 6, 5]")) << v;
  EXPECT_TRUE(contains(line_of_rank(v, 0), "(mesh [0, 0, 0]): [0:2, 0:6, 0:3]")) << v;
  EXPECT_TRUE(contains(line_of_rank(v, 1), "(mesh [0, 0, 1]): [0:2, 0:6, 3:5]")) << v;
  EXPECT_TRUE(contains(line_of_rank(v, 3), "(mesh [1, 0, 1]): [2:4, 0:6, 3:5]")) << v;
  // A replica names the first rank holding its block; partial sums name their mesh axes.
  const std::string b = visualize({4, 6, 5}, p, {sbp::broadcast, sbp::broadcast, sbp::split(1)});
  EXPECT_TRUE(contains(line_of_rank(b, 2), "[0:4, 0:3, 0:5], the same block as rank 0")) << b;
  const std::string ps = visualize(zeros({4, 6}, p, {sbp::partial_sum, sbp::broadcast, sbp::split(0)}));
  EXPECT_TRUE(contains(line_of_rank(ps, 3), "[2:4, 0:6] partial sum over mesh axis 0")) << ps;
}

}  // namespace
}  // namespace globe
