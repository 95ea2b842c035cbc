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
