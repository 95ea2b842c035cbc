// Tests for globe/autograd: graph recording, gradient accumulation, no_grad, detach, errors, and
// deep graphs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "globe/core/node.h"
#include "globe/globe.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::values;

using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using ::testing::StartsWith;
using V = std::vector<double>;


Tensor leaf(const V& v, const Shape& shape) {
  return from_vector(v, shape).set_requires_grad();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error was thrown";
  return "";
}

TEST(Autograd, RecordsTheGraphOnlyWhenAnInputRequiresGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor c = from_vector(V{3, 4}, {2});
  Tensor y = mul(x, c);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "mul");
  Tensor z = mul(c, c);
  EXPECT_FALSE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
  // Non-differentiable ops record nothing.
  EXPECT_FALSE(argmax(x, 0).requires_grad());
}

TEST(Autograd, SimpleGradient) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor c = from_vector(V{4, 5, 6}, {3});
  sum(mul(x, c)).backward();
  EXPECT_THAT(values(x.grad()), ElementsAre(4, 5, 6));
  EXPECT_FALSE(c.grad().defined());  // inputs that need no grad get none
}

TEST(Autograd, GradientsAccumulateOverTwoBackwardCalls) {
  Tensor x = leaf({1, -2, 3}, {3});
  Tensor loss = sum(mul(x, x));  // d/dx = 2x
  loss.backward();
  EXPECT_THAT(values(x.grad()), ElementsAre(2, -4, 6));
  loss.backward();  // the same graph again: sums
  EXPECT_THAT(values(x.grad()), ElementsAre(4, -8, 12));
  sum(mul(x, 10.0)).backward();  // a different graph: sums too
  EXPECT_THAT(values(x.grad()), ElementsAre(14, 2, 22));
  // Dropping the gradient starts afresh.
  x.set_grad(Tensor());
  loss.backward();
  EXPECT_THAT(values(x.grad()), ElementsAre(2, -4, 6));
}

TEST(Autograd, TensorUsedTwiceSumsItsGradients) {
  Tensor x = leaf({0.5, -1, 2}, {3});
  sum(add(mul(x, x), x)).backward();  // d/dx (x^2 + x) = 2x + 1
  EXPECT_THAT(values(x.grad()), Pointwise(DoubleNear(1e-12), V{2, -1, 5}));

  // An intermediate used by two consumers (diamond): y = h * h + 3h with h = exp(x).
  Tensor w = leaf({0.1, 0.2}, {2});
  Tensor h = exp(w);
  sum(add(mul(h, h), mul(h, 3.0))).backward();
  V expect;
  for (double v : {0.1, 0.2}) expect.push_back((2 * std::exp(v) + 3) * std::exp(v));
  EXPECT_THAT(values(w.grad()), Pointwise(DoubleNear(1e-12), expect));
}

TEST(Autograd, TwoLossesSharingASubgraph) {
  Tensor x = leaf({1, 2}, {2});
  Tensor h = mul(x, 3.0);
  sum(h).backward();
  sum(mul(h, h)).backward();  // d/dx 9x^2 = 18x
  EXPECT_THAT(values(x.grad()), Pointwise(DoubleNear(1e-12), V{3 + 18, 3 + 36}));
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = leaf({1, 2}, {2});
  ASSERT_TRUE(grad_enabled());
  Tensor y;
  {
    NoGradGuard guard;
    EXPECT_FALSE(grad_enabled());
    y = sum(mul(x, x));
    {
      NoGradGuard nested;
      EXPECT_FALSE(grad_enabled());
    }
    EXPECT_FALSE(grad_enabled());  // the inner guard restores the outer state
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
  EXPECT_DOUBLE_EQ(y.item<double>(), 5.0);  // values are still computed
  EXPECT_THAT(error_of([&] { y.backward(); }),
              AllOf(StartsWith("[backward]"), HasSubstr("does not require grad")));
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, DetachCutsTheGraph) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_THAT(values(d), ElementsAre(1, 2, 3));
  // y = x * stop_gradient(x): only one factor is differentiated.
  sum(mul(x, d)).backward();
  EXPECT_THAT(values(x.grad()), ElementsAre(1, 2, 3));
  // A detached intermediate has no graph behind it.
  Tensor h = mul(x, 2.0).detach();
  EXPECT_FALSE(h.requires_grad());
  EXPECT_EQ(h.grad_fn(), nullptr);
  EXPECT_THROW(sum(h).backward(), Error);
}

TEST(Autograd, BackwardOnNonScalarNamesTheShape) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = mul(x, 2.0);
  EXPECT_THAT(error_of([&] { y.backward(); }),
              AllOf(StartsWith("[backward]"), HasSubstr("[2, 3]")));
  // A one-element tensor of any rank is fine.
  sum(y, {}, true).backward();
  EXPECT_THAT(values(x.grad()), ElementsAre(2, 2, 2, 2, 2, 2));
}

TEST(Autograd, BackwardOnTensorWithoutGradThrows) {
  EXPECT_THAT(error_of([] { zeros({}).backward(); }), StartsWith("[backward]"));
  EXPECT_THAT(error_of([] { sum(ones({3})).backward(); }), StartsWith("[backward]"));
}

TEST(Autograd, ExplicitSeedForNonScalarRoot) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = mul(x, x);
  run_backward(y, from_vector(V{1, 0, -1}, {3}));
  EXPECT_THAT(values(x.grad()), ElementsAre(2, 0, -6));
  EXPECT_THAT(error_of([&] { run_backward(y, ones({2}, kFloat64)); }),
              AllOf(StartsWith("[backward]"), HasSubstr("[2]"), HasSubstr("[3]")));
}

TEST(Autograd, BackwardOnALeafItself) {
  Tensor x = leaf({4}, {});
  x.backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 1.0);
}

// Gradients reaching a leaf through broadcasting, transposes, expands and reductions arrive as
// strided views; the leaf's .grad is always a contiguous tensor of the leaf's shape and dtype.
TEST(Autograd, LeafGradsAreContiguousWithTheLeafsShape) {
  Tensor col = leaf({1, 2, 3}, {3, 1});
  Tensor mat = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor scalar = leaf({2}, {});
  Tensor vec = leaf({1, 1}, {2});
  Tensor wide = from_vector(V{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
  Tensor y = add(mul(col, wide), 0.0);        // [3, 1] broadcast to [3, 4]
  Tensor z = mul(transpose(mat, 0, 1), col);  // [3, 2]: gradient of mat is transposed
  Tensor e = expand(vec, {3, 2});             // stride-0 view
  Tensor loss = add(add(sum(y), sum(mul(z, e))), mul(sum(e), scalar));
  loss.backward();
  for (const Tensor* t : {&col, &mat, &scalar, &vec}) {
    const Tensor g = t->grad();
    ASSERT_TRUE(g.defined());
    EXPECT_EQ(g.shape(), t->shape());
    EXPECT_EQ(g.dtype(), t->dtype());
    EXPECT_TRUE(g.is_contiguous()) << describe(*t);
    EXPECT_FALSE(g.requires_grad());
    EXPECT_EQ(g.grad_fn(), nullptr);  // backward records no graph of its own
  }
  // d/dcol: rows of wide summed + sum over j of mat[j][i] * e[i][j]
  EXPECT_THAT(values(col.grad()), ElementsAre(10 + (1 + 4), 26 + (2 + 5), 42 + (3 + 6)));
  // d/dmat[j][i] = col[i] * e[i][j] = col[i]
  EXPECT_THAT(values(mat.grad()), ElementsAre(1, 2, 3, 1, 2, 3));
  EXPECT_DOUBLE_EQ(scalar.grad().item<double>(), 6.0);
  // d/dvec[j] = sum_i z[i][j] + 3 * scalar
  EXPECT_THAT(values(vec.grad()), ElementsAre((1 + 4 + 9) + 6, (4 + 10 + 18) + 6));
}

TEST(Autograd, GradDtypeFollowsTheLeafAcrossCasts) {
  Tensor x = from_vector(std::vector<float>{1, 2}, {2}).set_requires_grad();
  sum(mul(to_dtype(x, kFloat64), 3.0)).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  EXPECT_THAT(x.grad().to_vector<float>(), ElementsAre(3, 3));
}

TEST(Autograd, ViewsOfALeafRouteGradientsBack) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor loss = add(sum(mul(narrow(x, 1, 1, 2), 2.0)), sum(reshape(x, {-1})));
  loss.backward();
  EXPECT_THAT(values(x.grad()), ElementsAre(1, 3, 3, 1, 3, 3));
}

// narrow's backward writes zeros around the gradient's window into memory it does not clear as a
// whole: a window in the middle, at the start and at the end of a dim, after buffers of the same
// size were filled with non-zero values and freed (so the allocator hands their memory back).
TEST(Autograd, NarrowGradientIsZeroOutsideTheWindow) {
  for (auto [start, length] : {std::pair<int64_t, int64_t>{1, 2}, {0, 3}, {2, 2}}) {
    for (int i = 0; i < 4; ++i) (void)full({3, 4, 64}, 7.0);
    Tensor x = randn({3, 4, 64}).set_requires_grad();
    sum(narrow(x, 1, start, length)).backward();
    const std::vector<float> g = x.grad().to_vector<float>();
    for (int64_t i = 0; i < int64_t(g.size()); ++i) {
      const int64_t pos = (i / 64) % 4;
      EXPECT_EQ(g[size_t(i)], pos >= start && pos < start + length ? 1.0f : 0.0f) << "at " << i;
    }
  }
}

TEST(Autograd, GradEnabledIsRestoredAfterBackward) {
  Tensor x = leaf({1}, {1});
  sum(exp(x)).backward();
  EXPECT_TRUE(grad_enabled());
  // An int64 seed fails inside the backward pass (in mul's vjp); the state is still restored.
  Tensor y = mul(x, from_vector(V{2}, {1}));
  EXPECT_THAT(error_of([&] { run_backward(y, ones({1}, kInt64)); }), StartsWith("[mul]"));
  EXPECT_TRUE(grad_enabled());
}

// A 10k-op chain: building, differentiating and destroying the graph must not recurse per node.
TEST(Autograd, DeepChainDoesNotOverflowTheStack) {
  constexpr int kDepth = 10000;
  Tensor x = leaf({1.0}, {});
  {
    Tensor y = x;
    for (int i = 0; i < kDepth; ++i) y = mul(y, 1.0001);
    EXPECT_NEAR(y.item<double>(), std::pow(1.0001, kDepth), 1e-9);
    y.backward();
  }  // the whole graph is released here
  EXPECT_NEAR(x.grad().item<double>(), std::pow(1.0001, kDepth), 1e-9);
}

TEST(Autograd, DeepChainThroughBinaryOps) {
  constexpr int kDepth = 10000;
  Tensor x = leaf({0.5, -0.5}, {2});
  Tensor c = from_vector(V{1.0, 1.0}, {2});
  Tensor y = x;
  for (int i = 0; i < kDepth; ++i) y = add(y, c);  // grad 1 all the way down
  sum(y).backward();
  y = Tensor();
  EXPECT_THAT(values(x.grad()), ElementsAre(1, 1));
}

// The split backward (run_input_backward, as ZB-H1 runs it): the gradient values are those of one
// backward, and the weight pass left waiting holds what the weight gradients need — each layer's
// input and output gradient — not the forward graph: no more bytes than the forward saved.
TEST(Autograd, SplitBackwardKeepsOnlyWhatTheWeightPassNeeds) {
  const int layers = 4;
  const int64_t rows = 64, d = 32;
  auto run = [&](bool split) {
    manual_seed(3);
    Tensor x = randn({rows, d}).set_requires_grad();
    std::vector<Tensor> w;
    for (int k = 0; k < layers; ++k) w.push_back(randn({d, d}).set_requires_grad());
    const int64_t before = memory_stats().current_bytes;
    Tensor h = x;
    for (int k = 0; k < layers; ++k) h = relu(matmul(h, w[size_t(k)]));
    const int64_t forward = memory_stats().current_bytes - before;
    Tensor seed = ones_like(h);
    int64_t pending = 0;
    if (split) {
      WeightGradWork work = run_input_backward(h, seed, {x});
      h = Tensor();
      pending = memory_stats().current_bytes - before - (seed.numel() + x.numel()) * 4;  // minus seed, x.grad
      EXPECT_LE(pending, forward) << "forward saved " << forward << " bytes";
      work.run();
    } else {
      run_backward(h, seed);
    }
    std::vector<Tensor> grads = {x.grad()};
    for (const Tensor& t : w) grads.push_back(t.grad());
    return std::pair{grads, pending};
  };
  const auto [split, pending] = run(true);
  const auto [whole, unused] = run(false);
  EXPECT_GT(pending, 0);
  for (size_t i = 0; i < split.size(); ++i) EXPECT_EQ(values(split[i]), values(whole[i])) << "gradient " << i;
}

}  // namespace
}  // namespace globe
