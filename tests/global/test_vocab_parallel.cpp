// Cross-entropy over class-split (vocab-parallel) logits: the single-process loss and gradient, and
// the logits are never gathered (1, 2 and 4 ranks).
#include "test_util.h"

namespace globe {
namespace {

using testing::me;
using testing::world;

void check(const Placement& p, const NdSbp& logits_sbp, const NdSbp& target_sbp, int64_t rows, int64_t classes) {
  SCOPED_TRACE(p.to_string() + " " + logits_sbp.to_string());
  manual_seed(5);
  Tensor x = randn({rows, classes}, kFloat64);
  std::vector<int64_t> t;
  for (int64_t r = 0; r < rows; ++r) t.push_back((r * 5 + 3) % classes);
  Tensor target = from_vector(t, {rows});
  Tensor xl = x.detach();
  xl.set_requires_grad(true);
  Tensor want = cross_entropy(xl, target);
  want.backward();

  Tensor xg = from_full(x, p, logits_sbp).detach();
  xg.set_requires_grad(true);
  Tensor got = cross_entropy(xg, from_full(target, p, target_sbp));
  got.backward();
  EXPECT_NEAR(got.item<double>(), want.item<double>(), 1e-13);
  const auto g = testing::values(xg.grad()), w = testing::values(xl.grad());
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-14) << i;
  EXPECT_EQ(xg.grad().sbp(), xg.sbp());
}

TEST(VocabParallelCrossEntropy, EqualsTheSingleProcess) {
  const Placement all = Placement::all();
  check(all, sbp::split(1), sbp::broadcast, 6, 10);
  check(all, sbp::split(1), sbp::broadcast, 5, 3);  // fewer classes than ranks on 4: empty blocks
  if (world() == 4) {
    const Placement mesh = placement("cpu", {{0, 1}, {2, 3}});  // data x tensor parallel
    check(mesh, NdSbp{sbp::split(0), sbp::split(1)}, NdSbp{sbp::split(0), sbp::broadcast}, 6, 7);
    // a pipeline's last stage: ranks 0 and 1 are outside the logits' placement
    check(placement("cpu", {{2, 3}}), NdSbp{sbp::broadcast, sbp::split(1)}, NdSbp{sbp::broadcast, sbp::broadcast}, 6, 7);
  }
  if (world() >= 2) check(placement("cpu", std::vector<int>{world() - 1}), sbp::split(1), sbp::broadcast, 6, 10);
}

TEST(VocabParallelCrossEntropy, NeverHoldsTheWholeLogits) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  // One row of 2^22 float32 logits = 16 MiB, split over the ranks. A row-wise softmax would bring
  // the whole row to one rank (and allocate its log-softmax too): at least twice 16 MiB there. The
  // vocab-parallel path holds two shard-sized temporaries (shifted logits, their exponentials).
  const int64_t rows = 1, classes = int64_t(1) << 22;
  const double whole = double(rows * classes * 4);
  Tensor x = randn({rows, classes}, Placement::all(), sbp::split(1));
  Tensor target = zeros({rows}, Placement::all(), sbp::broadcast, kInt64);
  const int64_t before = memory_stats().current_bytes;
  reset_peak_memory();
  const float loss = cross_entropy(x, target).item<float>();
  const double peak = double(memory_stats().peak_bytes - before);
  EXPECT_GT(loss, 0.0f);
  EXPECT_LT(peak, 2.0 * whole / world() + 0.1 * whole) << "peak " << peak << " bytes for " << whole << " bytes of logits";
}

}  // namespace
}  // namespace globe
