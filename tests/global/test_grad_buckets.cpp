// resolve_pending_grads: data-parallel gradients waiting as partial sums are reduced together (one flat
// all-reduce per bucket) to the same values as reading them one by one, in each parameter's own
// layout, on ranks outside a placement too. Overlap: buckets start their reductions during
// backward, as their gradients complete, for any bucket size, and change no value.
#include <gtest/gtest.h>

#include "global_test_util.h"
#include "globe/autograd/engine.h"
#include "globe/global/leaf_gradients.h"
#include "globe/global/zero_layout.h"

namespace globe {
namespace {

// Two parameters replicated over every rank and one split, used on a batch split over the ranks:
// their gradients wait as partial sums (the split one is complete on each rank).
// (On a 2-D mesh the parameters are broadcast along both axes and the batch split along both:
// their gradients are partial sums over all four ranks.)
std::vector<Tensor> make_params(const Placement& p) {
  manual_seed(11);
  const NdSbp b = replicated(p.mesh_ndim());
  std::vector<Tensor> params = {from_full(randn({6, 4}), p, b), from_full(randn({4}), p, b),
                                from_full(randn({4, 3}), p, b)};
  for (Tensor& t : params) t.set_requires_grad(true);
  return params;
}

void backward_on_split_batch(const std::vector<Tensor>& w, const Placement& p) {
  manual_seed(12);
  const Tensor x = from_full(randn({8, 6}), p, NdSbp(std::vector<Sbp>(size_t(p.mesh_ndim()), sbp::split(0))));
  sum(matmul(relu(add(matmul(x, w[0]), w[1])), w[2])).backward();
}

// The same model on one process: the gradients every layout must reproduce.
std::vector<std::vector<float>> local_grads() {
  manual_seed(11);
  std::vector<Tensor> w = {randn({6, 4}), randn({4}), randn({4, 3})};
  for (Tensor& t : w) t.set_requires_grad(true);
  manual_seed(12);
  const Tensor x = randn({8, 6});
  sum(matmul(relu(add(matmul(x, w[0]), w[1])), w[2])).backward();
  std::vector<std::vector<float>> out;
  for (const Tensor& t : w) out.push_back(t.grad().to_vector<float>());
  return out;
}

void expect_grads(const std::vector<Tensor>& params, const std::vector<std::vector<float>>& want,
                  const std::string& what) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor g = params[i].grad();
    ASSERT_TRUE(g.defined()) << what << ": parameter " << i;
    EXPECT_EQ(g.sbp(), params[i].sbp()) << what;
    const auto got = g.to_local().to_vector<float>();
    ASSERT_EQ(got.size(), want[i].size()) << what;
    for (size_t j = 0; j < got.size(); ++j)
      EXPECT_NEAR(got[j], want[i][j], 1e-5 * (1 + std::abs(want[i][j]))) << what << ": parameter " << i << "[" << j << "]";
  }
}

// A bucket size for one scope.
class BucketBytes {
 public:
  explicit BucketBytes(int64_t bytes) : old_(grad_bucket_bytes()) { set_grad_bucket_bytes(bytes); }
  ~BucketBytes() { set_grad_bucket_bytes(old_); }

 private:
  int64_t old_;
};

bool gradients_wait() { return dist::world_size() > 1; }

TEST(GradBuckets, SettleTogetherEqualsOneByOne) {
  const Placement p = Placement::all();
  const auto a = make_params(p), b = make_params(p);
  backward_on_split_batch(a, p);
  backward_on_split_batch(b, p);
  if (dist::world_size() > 1) {
    for (const Tensor& t : a) EXPECT_TRUE(detail::grad_pending(t)) << "the test needs waiting gradients";
  }
  resolve_pending_grads(a);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(detail::grad_pending(a[i]));
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
  resolve_pending_grads(a);  // rank 2 and up hold empty shards: nothing to send, nothing to wait for
  for (const Tensor& t : a) EXPECT_EQ(Tensor(t.impl().grad).sbp(), t.sbp());
  if (p.contains(dist::world_rank())) {
    EXPECT_GT(a[0].grad().to_local().numel(), 0);
  }
}

// Sizes: a bucket per gradient (1 byte), two buckets (64 bytes: w2 48 B + w1 16 B, then w0 96 B),
// everything in one (the default 4 MiB, started when backward ends), and overlap off (0).
TEST(GradOverlap, EveryBucketSizeGivesTheSameGradients) {
  const auto want = local_grads();
  std::vector<Placement> placements = {Placement::all()};
  if (dist::world_size() == 4) placements.push_back(placement("cpu", {{0, 1}, {2, 3}}));
  for (const Placement& p : placements) {
    for (auto [bytes, flights] : {std::pair<int64_t, size_t>{1, 3}, {64, 2}, {int64_t(4) << 20, 1}, {0, 0}}) {
      const std::string what = p.to_string() + ", bucket " + std::to_string(bytes) + " bytes";
      BucketBytes size(bytes);
      const auto w = make_params(p);
      backward_on_split_batch(w, p);
      if (gradients_wait()) {
        // Started during backward, not yet read.
        EXPECT_EQ(detail::reductions_in_flight(), flights) << what;
        for (const Tensor& t : w) EXPECT_TRUE(detail::grad_pending(t)) << what;
      }
      expect_grads(w, want, what);
      EXPECT_EQ(detail::reductions_in_flight(), 0u) << what;
    }
  }
}

// A gradient that fills a bucket by itself starts alone and is summed in its own bytes (no copy
// into a bucket); the smaller ones still share a bucket. Two parameters that receive the very same
// gradient tensor (both inputs of one add) are copied instead: summing one in place would sum the
// other's bytes twice.
TEST(GradOverlap, AGradientFillingABucketIsSummedInItsOwnBytes) {
  if (!gradients_wait()) GTEST_SKIP() << "one rank: gradients do not wait";
  const Placement p = Placement::all();
  const auto want = local_grads();
  BucketBytes size(64);  // w[0]'s 96 bytes fill it; w[2] (48) and w[1] (16) share one
  const auto w = make_params(p);
  backward_on_split_batch(w, p);
  EXPECT_EQ(detail::reductions_in_flight(), 2u);
  std::vector<const void*> before;
  for (const Tensor& t : w) before.push_back(shard_of(Tensor(t.impl().grad)).storage()->data);
  expect_grads(w, want, "bucket of 64 bytes");
  EXPECT_EQ(w[0].grad().to_local().storage()->data, before[0]) << "w[0] was copied into a bucket";
  EXPECT_NE(w[2].grad().to_local().storage()->data, before[2]) << "w[2] shares a bucket with w[1]";

  // One gradient tensor for two parameters: a + b's backward hands both the same one. 80 KiB
  // each: summed by Open MPI's non-blocking all-reduce where they lie (smaller ones are summed at
  // once into a copy, which would hide two sums of the same bytes).
  manual_seed(13);
  Tensor a = from_full(randn({160, 128}), p, replicated(1)), b = from_full(randn({160, 128}), p, replicated(1));
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  const Tensor x = from_full(randn({8, 160}), p, {sbp::split(0)});
  sum(matmul(x, add(a, b))).backward();
  const std::vector<float> ga = a.grad().to_local().to_vector<float>(), gb = b.grad().to_local().to_vector<float>();
  manual_seed(13);
  Tensor la = randn({160, 128}), lb = randn({160, 128});
  la.set_requires_grad(true);
  sum(matmul(randn({8, 160}), add(la, lb))).backward();
  const std::vector<float> want_a = la.grad().to_vector<float>();
  for (size_t j = 0; j < want_a.size(); ++j) {
    EXPECT_NEAR(ga[j], want_a[j], 1e-5 * (1 + std::abs(want_a[j]))) << "a[" << j << "]";
    EXPECT_NEAR(gb[j], want_a[j], 1e-5 * (1 + std::abs(want_a[j]))) << "b[" << j << "]";
  }
}

// Gradients complete together (one node using several parameters) join the buckets in the
// node's input order on every rank, whatever their addresses: here each rank allocates the
// parameters in its own order, with a rank-dependent gap, and one cat uses them all.
TEST(GradOverlap, ParametersOfOneNodeJoinInInputOrder) {
  const Placement p = Placement::all();
  const int n = 8, me = dist::world_rank();
  std::vector<Tensor> params(n), shards(n), padding;
  for (int k = 0; k < n; ++k) {  // each rank allocates its shards in its own order, at its own addresses
    const int i = me % 2 ? n - 1 - k : k;
    padding.push_back(Tensor::uninitialized({(me + 1) * (k + 1) * 7}, DType::float32));
    shards[size_t(i)] = full({i + 1}, double(i));
  }
  for (int i = 0; i < n; ++i) {  // global ops in one order on every rank
    params[size_t(i)] = make_global(shards[size_t(i)], {i + 1}, p, replicated(1));
    params[size_t(i)].set_requires_grad(true);
  }
  manual_seed(13);
  const Tensor weights = from_full(randn({n * (n + 1) / 2}), p, sbp::broadcast);
  // Every rank sums its part of the batch: the gradients wait as partial sums.
  const Tensor batch = from_full(ones({int64_t(dist::world_size()) * 2}), p, sbp::split(0));
  sum(cat(params, 0) * weights * sum(batch)).backward();
  const auto w = weights.to_local().to_vector<float>();
  int64_t at = 0;
  for (int i = 0; i < n; ++i) {
    const auto got = params[size_t(i)].grad().to_local().to_vector<float>();
    ASSERT_EQ(int64_t(got.size()), i + 1);
    for (float g : got) EXPECT_NEAR(g, 2.0f * float(dist::world_size()) * w[size_t(at++)], 1e-5) << "parameter " << i;
  }
}

// Gradient accumulation: under NoSyncGuard backward starts nothing; the last micro-batch's
// backward reduces the sum once. Without the guard the values are the same (reduced twice).
TEST(GradOverlap, AccumulationReducesOnceUnderNoSync) {
  const Placement p = Placement::all();
  auto twice = local_grads();
  for (auto& g : twice)
    for (float& v : g) v *= 2;
  const auto w = make_params(p);
  {
    NoSyncGuard accumulate;
    backward_on_split_batch(w, p);
    EXPECT_EQ(detail::reductions_in_flight(), 0u);
  }
  backward_on_split_batch(w, p);
  if (gradients_wait()) { EXPECT_EQ(detail::reductions_in_flight(), 1u); }
  expect_grads(w, twice, "no_sync, then one reduction");

  const auto v = make_params(p);
  backward_on_split_batch(v, p);
  backward_on_split_batch(v, p);  // adds to gradients in flight: they land first
  expect_grads(v, twice, "two reductions");
}

// A gradient replaced while its reduction is in flight (zero_grad) stays replaced.
TEST(GradOverlap, ZeroGradWhileInFlightWins) {
  const Placement p = Placement::all();
  const auto w = make_params(p);
  backward_on_split_batch(w, p);
  for (const Tensor& t : w) t.set_grad(Tensor());
  resolve_pending_grads(w);
  for (const Tensor& t : w) EXPECT_FALSE(t.grad().defined());
  EXPECT_EQ(detail::reductions_in_flight(), 0u);
}

// ZeRO stage 2's parameters: each gradient is reduce-scattered into its update layout
// (zero_layout) as the backward completes it, nothing stays in flight or pending, and each rank
// holds its block alone, with the values of the single process.
TEST(GradOverlap, ZeroStage2ReducesEachGradientIntoItsSplit) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs 2 ranks: one rank has no data-parallel axis to split over";
  const Placement p = Placement::all();
  const auto w = make_params(p);
  const auto want = local_grads();
  reduce_into_update_layout(w, true);
  backward_on_split_batch(w, p);
  EXPECT_EQ(detail::reductions_in_flight(), 0u);
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_FALSE(detail::grad_pending(w[i])) << i;
    const Tensor g(w[i].impl().grad);
    ASSERT_TRUE(g.defined()) << i;
    EXPECT_EQ(g.sbp(), zero_layout(w[i])) << i;
    EXPECT_EQ(shard_of(g).shape(), local_shape(w[i].shape(), p, zero_layout(w[i]), dist::world_rank()))
        << "parameter " << i << " holds more than its block";
    const auto got = g.to_global(p, w[i].sbp()).to_local().to_vector<float>();
    for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[i][j], 1e-5 * (1 + std::abs(want[i][j]))) << i;
  }
  reduce_into_update_layout(w, false);
}

// Gradients are settled after the backward passes still paused have run (an optimizer calls
// finish_backward() first): settling them on a rank whose backward waits for another placement's
// ranks is an error that says so, and loses nothing: the pass then runs and the gradient is right.
TEST(GradOverlap, SettlingWhileABackwardIsPausedIsAnErrorThatLosesNothing) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs 2 ranks: a pass pauses for another placement's ranks";
  if (dist::consistency_checks()) GTEST_SKIP() << "consistency mode runs every backward through";
  const Placement first("cpu", {0}, {1}), second("cpu", {1}, {1});
  const Tensor w = from_full(ones({4}), first, sbp::broadcast).set_requires_grad();
  sum(mul(w, 3.0).to_global(second, sbp::broadcast)).backward();
  const bool waits = dist::world_rank() == 0;
  EXPECT_EQ(detail::backward_paused(), waits);
  if (waits) {
    const std::string error = testing::error_of([&] { resolve_pending_grads({w}); });
    EXPECT_NE(error.find("[resolve_pending_grads] a backward pass is paused"), std::string::npos) << error;
    EXPECT_NE(error.find("call finish_backward() first"), std::string::npos) << error;
  }
  finish_backward();
  EXPECT_FALSE(detail::backward_paused());
  resolve_pending_grads({w});
  const Tensor g = w.grad();
  ASSERT_TRUE(g.defined());
  if (waits) {
    EXPECT_EQ(g.to_local().to_vector<float>(), std::vector<float>(4, 3.0f));
  }
}

}  // namespace
}  // namespace globe
