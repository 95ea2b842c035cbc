// settle_grads: data-parallel gradients waiting as partial sums are reduced together (one flat
// all-reduce per bucket) to the same values as reading them one by one, in each parameter's own
// layout, on ranks outside a placement too.
#include <gtest/gtest.h>

#include "global_test_util.h"

namespace globe {
namespace {

// Two parameters replicated over every rank and one split, used on a batch split over the ranks:
// their gradients wait as partial sums (the split one is complete on each rank).
std::vector<Tensor> make_params(const Placement& p) {
  manual_seed(11);
  std::vector<Tensor> params = {from_full(randn({6, 4}), p, NdSbp({sbp::broadcast})),
                                from_full(randn({4}), p, NdSbp({sbp::broadcast})),
                                from_full(randn({4, 3}), p, NdSbp({sbp::broadcast}))};
  for (Tensor& t : params) t.set_requires_grad(true);
  return params;
}

void backward_on_split_batch(const std::vector<Tensor>& w, const Placement& p) {
  manual_seed(12);
  const Tensor x = from_full(randn({8, 6}), p, NdSbp({sbp::split(0)}));
  sum(matmul(relu(add(matmul(x, w[0]), w[1])), w[2])).backward();
}

TEST(GradBuckets, SettleTogetherEqualsOneByOne) {
  const Placement p = Placement::all();
  const auto a = make_params(p), b = make_params(p);
  backward_on_split_batch(a, p);
  backward_on_split_batch(b, p);
  if (dist::world_size() > 1) {
    for (const Tensor& t : a) EXPECT_TRUE(t.impl().grad_unsettled) << "the test needs waiting gradients";
  }
  settle_grads(a);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(a[i].impl().grad_unsettled);
    const Tensor ga(a[i].impl().grad);
    EXPECT_EQ(ga.sbp(), a[i].sbp()) << i;
    const auto got = ga.to_local().to_vector<float>(), want = b[i].grad().to_local().to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-6 * (1 + std::abs(want[j]))) << i << "," << j;
  }
}

TEST(GradBuckets, RanksOutsideThePlacementTakePart) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs a rank outside the placement";
  const Placement p = placement("cpu", {0, 1});
  const auto a = make_params(p);
  backward_on_split_batch(a, p);
  settle_grads(a);  // rank 2 and up hold empty shards: nothing to send, nothing to wait for
  for (const Tensor& t : a) EXPECT_EQ(Tensor(t.impl().grad).sbp(), t.sbp());
  if (p.contains(dist::world_rank())) {
    EXPECT_GT(a[0].grad().to_local().numel(), 0);
  }
}

}  // namespace
}  // namespace globe
