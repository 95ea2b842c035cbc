// Finite-difference gradient checks for every differentiable op and for the nn layers.
//
// One harness (as ggml's test-backend-ops): each table row names an op, the shapes (and value
// domain) of its float64 leaf inputs, and a lambda that builds the op's output from the leaves.
// The harness reduces the output to a scalar with fixed random weights, L = sum(out * W), so every
// output element matters, runs backward(), and compares each leaf's analytic gradient element by
// element with the central difference (L(x + eps) - L(x - eps)) / 2 eps.
//
// Non-contiguous inputs are covered by rows whose lambda takes a view (transpose, narrow) of a leaf
// before handing it to the op under test.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "globe/globe.h"

namespace globe {
namespace {

// ---- the harness --------------------------------------------------------------------------------

struct Tolerance {
  double eps = 1e-6;   // finite-difference step
  double rtol = 1e-6;  // relative to the numeric gradient
  double atol = 1e-7;
};

// Compares d(sum(forward() * W))/d(leaf) from backward() with central differences, for every
// element of every leaf. Leaves must be contiguous float64 tensors that require grad; forward()
// must read them afresh on every call (the harness perturbs them in place).
void expect_gradients_match(const std::string& what, const std::vector<Tensor>& leaves,
                            const std::function<Tensor()>& forward, const Tolerance& tol = {}) {
  for (const Tensor& leaf : leaves) {
    ASSERT_EQ(leaf.dtype(), kFloat64) << what;
    ASSERT_TRUE(leaf.is_contiguous() && leaf.is_leaf() && leaf.requires_grad()) << what;
    leaf.set_grad(Tensor());
  }
  Tensor out = forward();
  ASSERT_EQ(out.dtype(), kFloat64) << what;
  ASSERT_TRUE(out.requires_grad()) << what << ": output is not connected to the inputs";
  const Tensor weights = randn(out.shape(), kFloat64);
  sum(mul(out, weights)).backward();

  auto objective = [&] {
    NoGradGuard no_grad;
    return sum(mul(forward(), weights)).item<double>();
  };
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Tensor& leaf = leaves[i];
    const Tensor grad = leaf.grad();
    ASSERT_TRUE(grad.defined()) << what << ": input " << i << " got no gradient";
    ASSERT_EQ(grad.shape(), leaf.shape()) << what << ": input " << i;
    const std::vector<double> analytic = grad.to_vector<double>();
    double* x = leaf.data<double>();
    int mismatches = 0;
    std::ostringstream report;
    for (int64_t j = 0; j < leaf.numel(); ++j) {
      const double saved = x[j];
      x[j] = saved + tol.eps;
      const double plus = objective();
      x[j] = saved - tol.eps;
      const double minus = objective();
      x[j] = saved;
      const double numeric = (plus - minus) / (2 * tol.eps);
      if (std::abs(analytic[j] - numeric) > tol.atol + tol.rtol * std::abs(numeric)) {
        if (++mismatches <= 5)
          report << "\n  input " << i << " " << describe(leaf) << " element " << j << ": analytic "
                 << analytic[j] << " vs numeric " << numeric;
      }
    }
    EXPECT_EQ(mismatches, 0) << what << ": " << mismatches << " gradient mismatches"
                             << report.str();
  }
}

// How a leaf's values are drawn.
enum class Domain {
  normal,          // N(0, 1)
  positive,        // U[0.5, 2): for log, sqrt, pow, denominators
  away_from_zero,  // N(0, 1) pushed at least 0.1 from 0: for relu's kink
};

Tensor make_leaf(const Shape& shape, Domain domain) {
  Tensor t;
  switch (domain) {
    case Domain::normal:
      t = randn(shape, kFloat64);
      break;
    case Domain::positive:
      t = uniform(shape, 0.5, 2.0, kFloat64);
      break;
    case Domain::away_from_zero: {
      std::vector<double> v = randn(shape, kFloat64).to_vector<double>();
      for (double& x : v) x += std::copysign(0.1, x);
      t = from_vector(v, shape);
      break;
    }
  }
  return t.set_requires_grad();
}

using Leaves = std::vector<Tensor>;

struct OpCase {
  std::string name;
  std::vector<Shape> shapes;
  std::function<Tensor(const Leaves&)> build;
  std::vector<Domain> domains = {};  // per input; missing entries are Domain::normal
  Tolerance tol = {};
};

std::ostream& operator<<(std::ostream& os, const OpCase& c) {
  return os << c.name;
}

Tensor ints(const std::vector<int64_t>& v, const Shape& shape) {
  return from_vector(v, shape);
}

constexpr Domain kPos = Domain::positive;
constexpr Domain kNorm = Domain::normal;
constexpr Domain kAway = Domain::away_from_zero;

// ---- the table: every differentiable op ---------------------------------------------------------

std::vector<OpCase> op_cases() {
  return {
      // Elementwise binary, with broadcasting and non-contiguous operands.
      {"add_same_shape", {{2, 3}, {2, 3}}, [](const Leaves& x) { return add(x[0], x[1]); }},
      {"add_broadcast_col_row", {{3, 1}, {4}}, [](const Leaves& x) { return add(x[0], x[1]); }},
      {"add_broadcast_rank3", {{4}, {2, 3, 4}}, [](const Leaves& x) { return x[0] + x[1]; }},
      {"add_transposed_input",
       {{3, 2}, {2, 3}},
       [](const Leaves& x) { return add(transpose(x[0], 0, 1), x[1]); }},
      {"sub_broadcast", {{2, 3, 4}, {3, 1}}, [](const Leaves& x) { return sub(x[0], x[1]); }},
      {"mul_broadcast", {{3, 1}, {1, 4}}, [](const Leaves& x) { return mul(x[0], x[1]); }},
      {"mul_narrowed_input",
       {{4, 5}, {4, 2}},
       [](const Leaves& x) { return mul(narrow(x[0], 1, 1, 2), x[1]); }},
      {"mul_same_tensor", {{5}}, [](const Leaves& x) { return mul(x[0], x[0]); }},
      {"div_broadcast",
       {{2, 3}, {3}},
       [](const Leaves& x) { return div(x[0], x[1]); },
       {kNorm, kPos}},
      {"div_broadcast_numerator",
       {{3}, {2, 3}},
       [](const Leaves& x) { return x[0] / x[1]; },
       {kNorm, kPos}},
      // Scalar arithmetic and operators.
      {"add_scalar", {{2, 3}}, [](const Leaves& x) { return add(x[0], 0.7); }},
      {"mul_scalar", {{2, 3}}, [](const Leaves& x) { return mul(x[0], -1.5); }},
      {"scalar_operators",
       {{2, 3}},
       [](const Leaves& x) { return (2.0 - x[0]) * 3.0 + (x[0] - 1.0) / 4.0 + (1.0 + x[0]); }},
      {"scalar_divided_by_tensor", {{2, 3}}, [](const Leaves& x) { return 2.0 / x[0]; }, {kPos}},
      // Elementwise unary.
      {"neg", {{2, 3}}, [](const Leaves& x) { return neg(x[0]); }},
      {"exp", {{2, 3}}, [](const Leaves& x) { return exp(x[0]); }},
      {"log", {{2, 3}}, [](const Leaves& x) { return log(x[0]); }, {kPos}},
      {"sqrt", {{2, 3}}, [](const Leaves& x) { return sqrt(x[0]); }, {kPos}},
      {"pow_square", {{2, 3}}, [](const Leaves& x) { return pow(x[0], 2.0); }},
      {"pow_cube", {{2, 3}}, [](const Leaves& x) { return pow(x[0], 3.0); }},
      {"pow_fractional", {{2, 3}}, [](const Leaves& x) { return pow(x[0], 1.5); }, {kPos}},
      {"pow_negative", {{2, 3}}, [](const Leaves& x) { return pow(x[0], -0.5); }, {kPos}},
      {"relu", {{3, 4}}, [](const Leaves& x) { return relu(x[0]); }, {kAway}},
      {"gelu", {{3, 4}}, [](const Leaves& x) { return gelu(mul(x[0], 2.0)); }},
      {"gelu_tanh", {{3, 4}}, [](const Leaves& x) { return gelu_tanh(mul(x[0], 2.0)); }},
      {"pick", {{3, 4}}, [](const Leaves& x) { return pick(x[0], from_vector(std::vector<int64_t>{2, 0, 3}, {3})); }},
      {"matmul_nt_bias", {{2, 3, 4}, {5, 4}, {3, 1}}, [](const Leaves& x) { return matmul_nt(x[0], x[1], x[2]); }},
      {"causal_fill", {{2, 4, 4}}, [](const Leaves& x) { return causal_fill(x[0], -2.0); }},
      {"causal_softmax_fused", {{2, 3, 4}}, [](const Leaves& x) { return causal_softmax(x[0], 0.7); }},
      {"causal_attention", {{3, 2, 4, 3}}, [](const Leaves& x) { return causal_attention(x[0], 0.6); }},
      {"causal_attention_heads_view", {{3, 6, 4}},  // q, k, v as heads of a [3, B*T, E] projection
       [](const Leaves& x) { return causal_attention(permute(reshape(x[0], {3, 2, 3, 2, 2}), {0, 1, 3, 2, 4}), 1.3); }},
      {"causal_fill_softmax", {{3, 3}}, [](const Leaves& x) {
         return softmax(causal_fill(x[0], -std::numeric_limits<double>::infinity()), -1);
       }},
      {"tanh", {{3, 4}}, [](const Leaves& x) { return tanh(x[0]); }},
      {"sigmoid", {{3, 4}}, [](const Leaves& x) { return sigmoid(x[0]); }},
      {"unary_on_transposed",
       {{3, 4}},
       [](const Leaves& x) { return tanh(transpose(x[0], 0, 1)); }},
      // Casts: float64 -> float32 -> float64 quantises, so this row uses a wide step.
      {"to_dtype_round_trip",
       {{2, 3}},
       [](const Leaves& x) { return to_dtype(to_dtype(x[0], kFloat32), kFloat64); },
       {},
       {.eps = 1e-2, .rtol = 1e-5, .atol = 1e-5}},
      {"contiguous_of_transpose",
       {{3, 4}},
       [](const Leaves& x) { return contiguous(transpose(x[0], 0, 1)); }},
      // matmul.
      {"matmul_2d", {{3, 4}, {4, 5}}, [](const Leaves& x) { return matmul(x[0], x[1]); }},
      {"matmul_batched",
       {{2, 3, 4}, {2, 4, 5}},
       [](const Leaves& x) { return matmul(x[0], x[1]); }},
      {"matmul_broadcast_batch",
       {{2, 1, 3, 4}, {3, 4, 2}},
       [](const Leaves& x) { return matmul(x[0], x[1]); }},
      {"matmul_batch_times_2d",
       {{2, 3, 4}, {4, 5}},
       [](const Leaves& x) { return matmul(x[0], x[1]); }},
      {"matmul_2d_times_batch",
       {{3, 4}, {2, 4, 5}},
       [](const Leaves& x) { return matmul(x[0], x[1]); }},
      {"matmul_transposed_inputs",
       {{4, 3}, {5, 4}},
       [](const Leaves& x) { return matmul(transpose(x[0], 0, 1), transpose(x[1], 0, 1)); }},
      {"matmul_narrowed_input",
       {{3, 7}, {4, 2}},
       [](const Leaves& x) { return matmul(narrow(x[0], 1, 2, 4), x[1]); }},
      {"matmul_permuted_batch",
       {{4, 2, 3}, {2, 4, 5}},
       [](const Leaves& x) {
         return matmul(permute(x[0], {1, 2, 0}), x[1]);
       }},
      {"matmul_vector_left", {{4}, {4, 3}}, [](const Leaves& x) { return matmul(x[0], x[1]); }},
      {"matmul_vector_right", {{2, 3, 4}, {4}}, [](const Leaves& x) { return matmul(x[0], x[1]); }},
      {"matmul_dot", {{4}, {4}}, [](const Leaves& x) { return matmul(x[0], x[1]); }},
      // Reductions.
      {"sum_all", {{2, 3, 4}}, [](const Leaves& x) { return sum(x[0]); }},
      {"sum_dim", {{2, 3, 4}}, [](const Leaves& x) { return sum(x[0], {1}); }},
      {"sum_dims_keepdim",
       {{2, 3, 4}},
       [](const Leaves& x) {
         return sum(x[0], {0, -1}, true);
       }},
      {"sum_of_transposed",
       {{3, 4}},
       [](const Leaves& x) { return sum(transpose(x[0], 0, 1), {1}); }},
      {"sum_to",
       {{2, 3, 4}},
       [](const Leaves& x) {
         return sum_to(x[0], {3, 1});
       }},
      {"mean_all", {{2, 3, 4}}, [](const Leaves& x) { return mean(x[0]); }},
      {"mean_dims",
       {{2, 3, 4}},
       [](const Leaves& x) {
         return mean(x[0], {0, 2});
       }},
      {"mean_dim_keepdim", {{2, 3, 4}}, [](const Leaves& x) { return mean(x[0], {1}, true); }},
      {"max_all", {{3, 4}}, [](const Leaves& x) { return max(x[0]); }},
      {"max_dim", {{3, 4}}, [](const Leaves& x) { return max(x[0], {1}); }},
      {"max_dim0_keepdim", {{3, 4}}, [](const Leaves& x) { return max(x[0], {0}, true); }},
      {"max_dims_keepdim",
       {{2, 3, 4}},
       [](const Leaves& x) {
         return max(x[0], {0, 2}, true);
       }},
      // Softmax family.
      {"softmax_dim0", {{3, 4}}, [](const Leaves& x) { return softmax(x[0], 0); }},
      {"softmax_dim1", {{3, 4}}, [](const Leaves& x) { return softmax(x[0], 1); }},
      {"softmax_last_of_rank3", {{2, 3, 4}}, [](const Leaves& x) { return softmax(x[0], -1); }},
      {"softmax_transposed_input",
       {{3, 4}},
       [](const Leaves& x) { return softmax(transpose(x[0], 0, 1), 1); }},
      {"log_softmax_dim0", {{3, 4}}, [](const Leaves& x) { return log_softmax(x[0], 0); }},
      {"log_softmax_dim1", {{3, 4}}, [](const Leaves& x) { return log_softmax(x[0], 1); }},
      {"log_softmax_negative_dim",
       {{2, 3, 4}},
       [](const Leaves& x) { return log_softmax(x[0], -2); }},
      // Normalisation, lookup, regularisation, losses.
      {"layer_norm_weight_bias",
       {{3, 4}, {4}, {4}},
       [](const Leaves& x) { return layer_norm(x[0], {4}, x[1], x[2]); }},
      {"layer_norm_two_dims",
       {{2, 3, 4}, {3, 4}, {3, 4}},
       [](const Leaves& x) {
         return layer_norm(x[0], {3, 4}, x[1], x[2]);
       }},
      {"layer_norm_weight_only",
       {{2, 3, 4}, {4}},
       [](const Leaves& x) { return layer_norm(x[0], {4}, x[1], Tensor()); }},
      {"layer_norm_plain",
       {{2, 5}},
       [](const Leaves& x) { return layer_norm(x[0], {5}, Tensor(), Tensor()); }},
      {"rms_norm_weight", {{2, 3, 4}, {4}}, [](const Leaves& x) { return rms_norm(x[0], x[1], 1e-6); }},
      {"rms_norm_plain", {{3, 5}}, [](const Leaves& x) { return rms_norm(x[0], Tensor(), 1e-5); }},
      {"silu", {{3, 4}}, [](const Leaves& x) { return silu(mul(x[0], 2.0)); }},
      {"swiglu", {{3, 4}, {3, 4}}, [](const Leaves& x) { return swiglu(mul(x[0], 2.0), x[1]); }},
      {"swiglu_broadcast", {{3, 4}, {4}}, [](const Leaves& x) { return swiglu(mul(x[0], 2.0), x[1]); }},
      {"rotary_embedding_all_inputs",
       {{2, 3, 4}, {3, 2}, {3, 2}},
       [](const Leaves& x) { return rotary_embedding(x[0], x[1], x[2]); }},
      {"embedding_weight",
       {{5, 3}},
       [](const Leaves& x) {
         return embedding(x[0], ints({4, 0, 4, 2, 1, 4}, {2, 3}));
       }},
      {"dropout_fixed_seed",
       {{4, 5}},
       [](const Leaves& x) {
         manual_seed(77);  // the same mask on every evaluation
         return dropout(x[0], 0.4);
       }},
      {"mse_loss", {{3, 4}, {3, 4}}, [](const Leaves& x) { return mse_loss(x[0], x[1]); }},
      {"cross_entropy",
       {{4, 5}},
       [](const Leaves& x) {
         return cross_entropy(x[0], ints({1, 0, 4, 4}, {4}));
       }},
      {"cross_entropy_rank3",
       {{2, 3, 4}},
       [](const Leaves& x) {
         return cross_entropy(x[0], ints({0, 3, 1, 2, 2, 0}, {2, 3}));
       }},
      {"cross_entropy_transposed_logits",
       {{5, 4}},
       [](const Leaves& x) {
         return cross_entropy(transpose(x[0], 0, 1), ints({1, 0, 4, 3}, {4}));
       }},
      // Indexing.
      {"gather_dim1",
       {{3, 4}},
       [](const Leaves& x) {
         return gather(x[0], 1, ints({3, 0, 0, 1, 2, 2, 3, 1, 0}, {3, 3}));
       }},
      {"gather_dim0",
       {{3, 4}},
       [](const Leaves& x) {
         return gather(x[0], 0, ints({2, 0, 1, 2, 0, 0, 2, 1}, {2, 4}));
       }},
      {"scatter_add_src",
       {{2, 3}},
       [](const Leaves& x) {
         return scatter_add({2, 4}, 1, ints({3, 0, 3, 1, 1, 2}, {2, 3}), x[0]);
       }},
      // Shape and data movement.
      {"cat_dim0",
       {{2, 3}, {1, 3}, {3, 3}},
       [](const Leaves& x) {
         return cat({x[0], x[1], x[2]}, 0);
       }},
      {"cat_dim1_with_view",
       {{2, 3}, {4, 2}},
       [](const Leaves& x) {
         return cat({x[0], transpose(narrow(x[1], 0, 1, 3), 0, 1)}, 1);
       }},
      {"narrow", {{4, 5}}, [](const Leaves& x) { return narrow(x[0], 1, 1, 3); }},
      {"slice_negative", {{4, 5}}, [](const Leaves& x) { return slice(x[0], 0, -3, -1); }},
      {"transpose", {{2, 3, 4}}, [](const Leaves& x) { return transpose(x[0], 0, 2); }},
      {"permute",
       {{2, 3, 4}},
       [](const Leaves& x) {
         return permute(x[0], {1, 2, 0});
       }},
      {"expand",
       {{3, 1}},
       [](const Leaves& x) {
         return expand(x[0], {2, 3, 4});
       }},
      {"reshape",
       {{2, 3, 4}},
       [](const Leaves& x) {
         return reshape(x[0], {4, -1});
       }},
      {"reshape_of_transposed",
       {{3, 4}},
       [](const Leaves& x) { return reshape(transpose(x[0], 0, 1), {-1}); }},
      {"view",
       {{2, 6}},
       [](const Leaves& x) {
         return view(x[0], {3, 4});
       }},
      {"flatten", {{2, 3, 4}}, [](const Leaves& x) { return flatten(x[0], 1); }},
      {"unsqueeze_squeeze",
       {{3, 4}},
       [](const Leaves& x) { return squeeze(unsqueeze(x[0], 1), 1); }},
      {"squeeze", {{3, 1, 4}}, [](const Leaves& x) { return squeeze(x[0], 1); }},
      // A small composite: gradients meet through several paths.
      {"mlp_composite",
       {{4, 3}, {3, 5}, {5}},
       [](const Leaves& x) { return softmax(gelu(matmul(x[0], x[1]) + x[2]), 1) * sum(x[0]); }},
  };
}

class OpGradCheck : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpGradCheck, AnalyticMatchesFiniteDifferences) {
  const OpCase& c = GetParam();
  manual_seed(std::hash<std::string>{}(c.name));
  Leaves leaves;
  for (size_t i = 0; i < c.shapes.size(); ++i)
    leaves.push_back(make_leaf(c.shapes[i], i < c.domains.size() ? c.domains[i] : Domain::normal));
  expect_gradients_match(
      c.name, leaves, [&] { return c.build(leaves); }, c.tol);
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpGradCheck, ::testing::ValuesIn(op_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) {
                           return info.param.name;
                         });

// The harness can fail: a wrong gradient is caught.
TEST(GradCheckHarness, DetectsAWrongGradient) {
  Tensor x = randn({3}, kFloat64).set_requires_grad();
  // detach() hides one factor from autograd: the analytic gradient is half the true one.
  EXPECT_NONFATAL_FAILURE(expect_gradients_match("wrong", {x}, [&] { return mul(x, x.detach()); }),
                          "gradient mismatches");
}

// ---- nn layers in float64 -----------------------------------------------------------------------

Leaves with_input(const nn::Module& m, const Tensor& x) {
  Leaves leaves = m.parameters();
  leaves.push_back(x);
  return leaves;
}

TEST(LayerGradCheck, Linear) {
  manual_seed(101);
  nn::Linear fc(4, 3);
  fc.to(kFloat64);
  ASSERT_EQ(fc.weight.dtype(), kFloat64);
  ASSERT_TRUE(fc.weight.requires_grad());
  Tensor x = randn({2, 5, 4}, kFloat64).set_requires_grad();
  expect_gradients_match("Linear", with_input(fc, x), [&] { return fc(x); });
}

TEST(LayerGradCheck, LinearWithoutBias) {
  manual_seed(102);
  nn::Linear fc(3, 2, /*bias=*/false);
  fc.to(kFloat64);
  Tensor x = randn({4, 3}, kFloat64).set_requires_grad();
  expect_gradients_match("Linear(bias=false)", with_input(fc, x), [&] { return fc(x); });
}

TEST(LayerGradCheck, LayerNorm) {
  manual_seed(103);
  nn::LayerNorm ln({4});
  ln.to(kFloat64);
  // Non-trivial affine parameters (the defaults are ones and zeros).
  copy_(ln.weight, randn({4}, kFloat64));
  copy_(ln.bias, randn({4}, kFloat64));
  Tensor x = randn({3, 4}, kFloat64).set_requires_grad();
  expect_gradients_match("LayerNorm", with_input(ln, x), [&] { return ln(x); });
}

TEST(LayerGradCheck, Embedding) {
  manual_seed(104);
  nn::Embedding emb(6, 3);
  emb.to(kFloat64);
  Tensor idx = from_vector(std::vector<int64_t>{5, 0, 5, 2, 2, 2, 1, 3}, {2, 4});
  expect_gradients_match("Embedding", emb.parameters(), [&] { return emb(idx); });
}

TEST(LayerGradCheck, SequentialMlpWithLoss) {
  manual_seed(105);
  nn::Sequential net(std::make_shared<nn::Linear>(4, 6), std::make_shared<nn::Tanh>(),
                     std::make_shared<nn::Linear>(6, 3));
  net.to(kFloat64);
  Tensor x = randn({5, 4}, kFloat64).set_requires_grad();
  Tensor target = from_vector(std::vector<int64_t>{0, 2, 1, 1, 0}, {5});
  expect_gradients_match("Sequential + cross_entropy", with_input(net, x),
                         [&] { return cross_entropy(net(x), target); });
}

}  // namespace
}  // namespace globe
