// Bad input to global ops (issue: global ops and autograd): each is a clear globe::Error that names
// the op, the layouts or placements involved and the rank — never a hang or a wrong answer.
#include <gmock/gmock.h>

#include "global_test_util.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::error_of;

using ::testing::HasSubstr;


TEST(GlobalErrors, InputsOnDifferentPlacementsNameBoth) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Tensor a = randn({4, 3}, placement("cpu", {0, 1}), sbp::split(0));
  Tensor b = randn({4, 3}, placement("cpu", {1, 0}), sbp::split(0));
  const std::string msg = error_of([&] { add(a, b); });
  EXPECT_THAT(msg, HasSubstr("[add]"));
  EXPECT_THAT(msg, HasSubstr("different placements"));
  EXPECT_THAT(msg, HasSubstr("placement(cpu, [0, 1])"));
  EXPECT_THAT(msg, HasSubstr("placement(cpu, [1, 0])"));
  EXPECT_THAT(msg, HasSubstr("(rank " + std::to_string(dist::world_rank()) + ")"));
}

// from_full's ranks must pass one whole value: where they do not (an unseeded draw, a per-rank
// file), every member fails naming who passed what, rather than each keeping its block of its own
// value ([10, 10, 20, 20] from [10, 10, 10, 10] and [20, 20, 20, 20]). Ranks that agree run on.
TEST(GlobalErrors, FromFullWithDifferentValuesNamesTheRanks) {
  const int n = dist::world_size(), me = dist::world_rank();
  const Placement p = Placement::all();
  const Tensor same = full({4}, 10.0);
  const Tensor agreed = from_full(same, p, sbp::split(0));
  EXPECT_EQ(agreed.to_global(p, sbp::broadcast).to_local().to_vector<float>(), std::vector<float>(4, 10.0f));
  if (n < 2) GTEST_SKIP() << "needs 2 ranks";
  const Tensor mine = full({4}, me % 2 == 0 ? 10.0 : 20.0);  // odd ranks differ from rank 0
  const std::string msg = error_of([&] { from_full(mine, p, sbp::split(0)); });
  EXPECT_THAT(msg, HasSubstr("[from_full]"));
  EXPECT_THAT(msg, HasSubstr("different whole values of shape [4] (float32)"));
  EXPECT_THAT(msg, HasSubstr(n == 2 ? "rank 0 one value, rank 1 another" : "ranks 0, 2 one value, ranks 1, 3 another"));
  // A shape or dtype that differs is a different value too; one element differing is enough.
  const Tensor longer = full({me == n - 1 ? 5 : 4}, 10.0);
  EXPECT_THAT(error_of([&] { from_full(longer, p, sbp::broadcast); }), HasSubstr("[from_full]"));
  Tensor one_off = full({1000}, 1.0);
  if (me == n - 1) one_off.data<float>()[777] = std::nextafter(1.0f, 2.0f);
  EXPECT_THAT(error_of([&] { from_full(one_off, p, sbp::split(0)); }),
              HasSubstr("rank " + std::to_string(n - 1) + " another"));
  // A placement of some ranks checks among its members only.
  const Placement first = placement("cpu", {0});
  EXPECT_EQ(from_full(mine, first, sbp::broadcast).to_global(p, sbp::broadcast).to_local().to_vector<float>(),
            std::vector<float>(4, 10.0f));
}

// A bool tensor is never a partial sum (a sum of truth values is a count): refused by name, on
// creation and on boxing, while comparisons of partial values box them first and give B.
TEST(GlobalErrors, BoolTensorsAreNeverPartial) {
  const Placement p = Placement::all();
  EXPECT_THAT(error_of([&] { zeros({4}, p, sbp::partial_sum, kBool); }),
              HasSubstr("[to_global] a bool tensor cannot be partial_sum (P): a sum of truth values is a count"));
  const Tensor m = gt(randn({4}, p, sbp::partial_sum), 0.0);
  EXPECT_FALSE(m.sbp().any_partial()) << m.sbp().to_string();
  EXPECT_THAT(error_of([&] { m.to_global(p, sbp::partial_sum); }), HasSubstr("a bool tensor cannot be partial_sum"));
  // Casting a partial sum into bool or int64 sums first (each summand cast alone would differ).
  manual_seed(3);
  const Tensor whole = mul(randn({6}), 3.0);
  const Tensor parts = make_global(dist::world_rank() == 0 ? whole : zeros({6}), {6}, p, sbp::partial_sum);
  EXPECT_EQ(to_dtype(parts, kBool).to_vector<double>(), to_dtype(whole, kBool).to_vector<double>());
  EXPECT_EQ(to_dtype(parts, kInt64).to_vector<double>(), to_dtype(whole, kInt64).to_vector<double>());
  const Tensor halves = make_global(mul(whole, 1.0 / dist::world_size()), {6}, p, sbp::partial_sum);
  EXPECT_EQ(to_dtype(halves, kInt64).to_vector<int64_t>(), to_dtype(halves.to_global(p, sbp::broadcast), kInt64).to_vector<int64_t>())
      << "each summand truncated on its own";
}

TEST(GlobalErrors, LocalMixedWithGlobal) {
  Tensor g = randn({4, 3}, Placement::all(), sbp::broadcast);
  Tensor l = randn({4, 3});
  const std::string msg = error_of([&] { matmul(g, transpose(l, 0, 1)); });
  EXPECT_THAT(msg, HasSubstr("[matmul] mixes local and global tensors"));
  EXPECT_THAT(msg, HasSubstr("float32[3, 4]"));
  EXPECT_THAT(msg, HasSubstr("to_global"));
}

// A global tensor has no strides, offset or storage of its own: each accessor says so, naming itself.
TEST(GlobalErrors, LocalAccessorsOfAGlobalTensorNameThemselves) {
  const Tensor g = randn({4, 3}, Placement::all(), sbp::broadcast);
  EXPECT_THAT(error_of([&] { (void)g.strides(); }), HasSubstr("[strides] a global tensor has no strides; use to_local()"));
  EXPECT_THAT(error_of([&] { (void)g.offset(); }), HasSubstr("[offset] a global tensor has no offset; use to_local()"));
  EXPECT_THAT(error_of([&] { (void)g.storage(); }), HasSubstr("[storage] a global tensor has no storage; use to_local()"));
  EXPECT_EQ(g.to_local().strides(), (Shape{3, 1}));
}

TEST(GlobalErrors, ShapesNoOpAccepts) {
  Tensor a = randn({4, 3}, Placement::all(), sbp::split(0));
  Tensor b = randn({4, 3}, Placement::all(), sbp::split(0));
  const std::string msg = error_of([&] { matmul(a, b); });
  EXPECT_THAT(msg, HasSubstr("[matmul] inner dims differ: [4, 3] @ [4, 3]"));
}

TEST(GlobalErrors, BackwardFromNonScalar) {
  Tensor w = randn({4, 3}, Placement::all(), sbp::broadcast).set_requires_grad();
  Tensor y = mul(w, 2.0);
  const std::string msg = error_of([&] { y.backward(); });
  EXPECT_THAT(msg, HasSubstr("[backward]"));
  EXPECT_THAT(msg, HasSubstr("[4, 3]"));
}

TEST(GlobalErrors, SplitAxisOutOfRange) {
  const std::string msg = error_of([&] { randn({4, 3}, Placement::all(), sbp::split(2)); });
  EXPECT_THAT(msg, HasSubstr("split dim 2 out of range"));
  Tensor x = randn({4, 3}, Placement::all(), sbp::broadcast);
  EXPECT_THAT(error_of([&] { x.to_global(sbp::split(-3)); }), HasSubstr("split dim -3 out of range"));
}

TEST(GlobalErrors, SbpDoesNotMatchMesh) {
  if (dist::world_size() != 4) GTEST_SKIP() << "needs 4 ranks";
  const std::string msg = error_of([&] { randn({4, 3}, placement("cpu", {{0, 1}, {2, 3}}), sbp::split(0)); });
  EXPECT_THAT(msg, HasSubstr("has 1 entries but the placement's mesh has 2 axes"));
}

TEST(GlobalErrors, DistributeWithUnknownNameChangesNothing) {
  nn::Linear fc(3, 2);
  const Tensor before = fc.weight;
  const std::string msg = error_of([&] { fc.distribute(Placement::all(), {{"wieght", sbp::split(0)}}, sbp::broadcast); });
  EXPECT_THAT(msg, HasSubstr("[distribute]"));
  EXPECT_THAT(msg, HasSubstr("'wieght'"));
  EXPECT_TRUE(fc.weight.same(before));
  EXPECT_FALSE(fc.weight.is_global());
}

TEST(GlobalErrors, LoadStateDictIntoGlobalModelChecksShapes) {
  nn::Linear fc(3, 2);
  fc.to_global(Placement::all(), sbp::broadcast);
  StateDict bad;
  bad.set("weight", zeros({3, 2}));
  bad.set("bias", zeros({2}));
  const std::string msg = error_of([&] { fc.load_state_dict(bad); });
  EXPECT_THAT(msg, HasSubstr("weight: checkpoint [3, 2] vs model [2, 3]"));
}

TEST(GlobalErrors, GradientLayoutMatchesLeafAfterAccumulation) {
  // Not an error case, but the contract errors guard: two backward passes accumulate into a
  // split leaf and its gradient stays in the leaf's layout with the summed value.
  Tensor w = randn({5, 3}, Placement::all(), sbp::split(0), kFloat64).set_requires_grad();
  sum(mul(w, 2.0)).backward();
  sum(w).backward();
  EXPECT_EQ(w.grad().sbp(), NdSbp(sbp::split(0)));
  for (double v : w.grad().to_vector<double>()) EXPECT_EQ(v, 3.0);
}

}  // namespace
}  // namespace globe
