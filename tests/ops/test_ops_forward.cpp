// Forward values of every op in globe/ops/ops.h against hand-computed or std:: reference values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "globe/globe.h"
#include "globe/kernels/cpu/attention.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::values;

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::Pointwise;
using V = std::vector<double>;


Tensor f32(const V& v, const Shape& shape) {
  return from_vector(std::vector<float>(v.begin(), v.end()), shape);
}
Tensor f64(const V& v, const Shape& shape) {
  return from_vector(v, shape);
}
Tensor i64(const std::vector<int64_t>& v, const Shape& shape) {
  return from_vector(v, shape);
}

// Expects `t` to have `shape` and values within `tol` of `expected`.
void expect_values(const Tensor& t, const Shape& shape, const V& expected, double tol = 1e-6) {
  EXPECT_EQ(t.shape(), shape);
  EXPECT_THAT(values(t), Pointwise(DoubleNear(tol), expected));
}

// Applies f elementwise to v.
V map(const V& v, const std::function<double(double)>& f) {
  V out;
  for (double x : v) out.push_back(f(x));
  return out;
}

// ---- elementwise binary with broadcasting -------------------------------------------------------

TEST(OpsForward, AddSubMulDivSameShape) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2}), b = f32({5, 6, 7, 8}, {2, 2});
  expect_values(add(a, b), {2, 2}, {6, 8, 10, 12});
  expect_values(sub(a, b), {2, 2}, {-4, -4, -4, -4});
  expect_values(mul(a, b), {2, 2}, {5, 12, 21, 32});
  expect_values(div(a, b), {2, 2}, {1.0 / 5, 2.0 / 6, 3.0 / 7, 4.0 / 8});
  EXPECT_EQ(add(a, b).dtype(), kFloat32);
}

TEST(OpsForward, BroadcastColumnPlusRow) {
  Tensor col = f32({1, 2, 3}, {3, 1}), row = f32({10, 20, 30, 40}, {1, 4});
  expect_values(add(col, row), {3, 4}, {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  expect_values(sub(col, row), {3, 4}, {-9, -19, -29, -39, -8, -18, -28, -38, -7, -17, -27, -37});
  expect_values(mul(col, row), {3, 4}, {10, 20, 30, 40, 20, 40, 60, 80, 30, 60, 90, 120});
  expect_values(div(row, col), {3, 4},
                {10, 20, 30, 40, 5, 10, 15, 20, 10.0 / 3, 20.0 / 3, 10, 40.0 / 3}, 1e-5);
}

TEST(OpsForward, BroadcastVectorAgainstRank3) {
  Tensor v = f64({1, 2, 3, 4}, {4});
  Tensor big = reshape(arange(0.0, 24.0, 1.0, kFloat64), {2, 3, 4});
  V expected;
  for (int i = 0; i < 24; ++i) expected.push_back(i + (i % 4) + 1);
  expect_values(add(v, big), {2, 3, 4}, expected);
  expect_values(add(big, v), {2, 3, 4}, expected);
  V prod;
  for (int i = 0; i < 24; ++i) prod.push_back(i * ((i % 4) + 1));
  expect_values(mul(big, v), {2, 3, 4}, prod);
}

TEST(OpsForward, BroadcastWithScalarTensorAndNonContiguous) {
  Tensor s = full({}, 2.0, kFloat64);
  Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(mul(a, s), {2, 3}, {2, 4, 6, 8, 10, 12});
  Tensor t = transpose(a, 0, 1);  // [3, 2] non-contiguous
  expect_values(add(t, f64({100, 200}, {2})), {3, 2}, {101, 204, 102, 205, 103, 206});
}

TEST(OpsForward, IntegerArithmetic) {
  Tensor a = i64({1, 2, 3}, {3}), b = i64({10, 20, 30}, {3});
  Tensor c = add(a, b);
  EXPECT_EQ(c.dtype(), kInt64);
  EXPECT_THAT(c.to_vector<int64_t>(), ElementsAre(11, 22, 33));
  EXPECT_THAT(sub(a, b).to_vector<int64_t>(), ElementsAre(-9, -18, -27));
  EXPECT_THAT(mul(a, b).to_vector<int64_t>(), ElementsAre(10, 40, 90));
}

TEST(OpsForward, ScalarOpsAndOperators) {
  Tensor a = f64({1, 2, 4}, {3}), b = f64({2, 2, 2}, {3});
  expect_values(add(a, 1.5), {3}, {2.5, 3.5, 5.5});
  expect_values(mul(a, -2.0), {3}, {-2, -4, -8});
  expect_values(a + b, {3}, {3, 4, 6});
  expect_values(a - b, {3}, {-1, 0, 2});
  expect_values(a * b, {3}, {2, 4, 8});
  expect_values(a / b, {3}, {0.5, 1, 2});
  expect_values(-a, {3}, {-1, -2, -4});
  expect_values(a + 1.0, {3}, {2, 3, 5});
  expect_values(1.0 + a, {3}, {2, 3, 5});
  expect_values(a - 1.0, {3}, {0, 1, 3});
  expect_values(1.0 - a, {3}, {0, -1, -3});
  expect_values(a * 3.0, {3}, {3, 6, 12});
  expect_values(3.0 * a, {3}, {3, 6, 12});
  expect_values(a / 4.0, {3}, {0.25, 0.5, 1});
  expect_values(4.0 / a, {3}, {4, 2, 1});
}

// ---- elementwise unary --------------------------------------------------------------------------

TEST(OpsForward, UnaryMathMatchesStd) {
  const V x = {-2.5, -1, -0.3, 0.2, 1, 3};
  const V pos = {0.1, 0.5, 1, 2, 9, 100};
  Tensor t = f64(x, {2, 3}), p = f64(pos, {2, 3});
  const double tol = 1e-12;
  expect_values(neg(t), {2, 3}, map(x, [](double v) { return -v; }), tol);
  expect_values(exp(t), {2, 3}, map(x, [](double v) { return std::exp(v); }), tol);
  expect_values(log(p), {2, 3}, map(pos, [](double v) { return std::log(v); }), tol);
  expect_values(sqrt(p), {2, 3}, map(pos, [](double v) { return std::sqrt(v); }), tol);
  expect_values(pow(p, 3.0), {2, 3}, map(pos, [](double v) { return v * v * v; }), 1e-9);
  expect_values(pow(p, 0.5), {2, 3}, map(pos, [](double v) { return std::sqrt(v); }), tol);
  expect_values(pow(t, 2.0), {2, 3}, map(x, [](double v) { return v * v; }), tol);
  expect_values(pow(p, -1.0), {2, 3}, map(pos, [](double v) { return 1 / v; }), tol);
  expect_values(relu(t), {2, 3}, {0, 0, 0, 0.2, 1, 3}, 0);
  expect_values(tanh(t), {2, 3}, map(x, [](double v) { return std::tanh(v); }), tol);
  expect_values(sigmoid(t), {2, 3}, map(x, [](double v) { return 1 / (1 + std::exp(-v)); }), tol);
  expect_values(gelu(t), {2, 3},
                map(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }), tol);
}

TEST(OpsForward, GeluKnownValues) {
  // torch.nn.functional.gelu (erf form) at -1, 0, 1, 2.
  expect_values(gelu(f32({-1, 0, 1, 2}, {4})), {4},
                {-0.15865525393145707, 0.0, 0.8413447460685429, 1.9544997361036416}, 1e-6);
}

TEST(OpsForward, GeluTanhKnownValues) {
  // torch.nn.functional.gelu(x, approximate='tanh') at -1, 0, 1, 2 (float64).
  expect_values(gelu_tanh(to_dtype(f32({-1, 0, 1, 2}, {4}), kFloat64)), {4},
                {-0.15880800939172324, 0.0, 0.8411919906082768, 1.954597694087775}, 1e-15);
}

// The float32 kernels behind exp, GELU (tanh form), its derivative and softmax use a vectorised
// exp (fast_math.h; an AVX2 copy where the CPU has it): over a sweep from tiny to huge magnitudes,
// both signs, they stay within a few float ulps of the double-precision functions (GELU and its
// slope relative or about x's ulp), keep inf, -inf -> 0 and NaN. tanh itself is std::tanh.
TEST(OpsForward, FastFloatMathOverTheRange) {
  std::vector<double> x = {0.0, -0.0, 1e-30, -1e-30, 1e-8, 0.0624, 0.0625, 0.0626, 3.0, 9.5, 20.0, 87.0, 88.5, 1e4, 1e30};
  for (double v = -12.0; v <= 12.0; v += 0.013) x.push_back(v);
  const size_t n = x.size();
  for (size_t i = 0; i < n; ++i) x.push_back(-x[i]);
  Tensor t = f32(x, {int64_t(x.size())});
  const std::vector<float> th = tanh(t).to_vector<float>(), ge = gelu_tanh(t).to_vector<float>();
  Tensor leaf = t.detach().set_requires_grad();
  sum(gelu_tanh(leaf)).backward();
  const std::vector<float> slope = leaf.grad().to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = double(float(x[i]));
    const double want_th = std::tanh(v);
    const double c = 0.7978845608028654, tn = std::tanh(c * (v + 0.044715 * v * v * v));
    const double want_ge = 0.5 * v * (1 + tn);
    const double want_slope = 0.5 * (1 + tn) + 0.5 * v * (1 - tn * tn) * c * (1 + 3 * 0.044715 * v * v);
    EXPECT_NEAR(th[i], want_th, 4e-7 * std::abs(want_th) + 1e-37) << "tanh(" << v << ")";
    // Where the gate is tiny (large negative x) the float value is about x's ulp from the double
    // one, not within the tiny value's own ulps (torch's float GELU, through 1 + tanh, too).
    EXPECT_NEAR(ge[i], want_ge, 1e-6 * std::abs(want_ge) + 1e-7 * std::abs(v) + 1e-37) << "gelu_tanh(" << v << ")";
    if (std::abs(v) < 1e6) {  // beyond, x^3 overflows float
      EXPECT_NEAR(slope[i], want_slope, 2e-6 * std::abs(want_slope) + 1e-7) << "gelu_tanh'(" << v << ")";
    }
  }
  const float inf = INFINITY, nan = NAN;
  // exp over the whole range: down to the subnormals (about x's ulp there) and up to overflow.
  std::vector<double> ex = {-inf, -120.0, -103.9, -100.0, -87.5, 88.5, 88.7, 88.75, 100.0, inf};
  for (double v = -104.0; v <= 89.0; v += 0.0371) ex.push_back(v);
  const std::vector<float> got_exp = exp(f32(ex, {int64_t(ex.size())})).to_vector<float>();
  for (size_t i = 0; i < ex.size(); ++i) {
    const double v = double(float(ex[i])), want = std::exp(v);
    if (want > double(std::numeric_limits<float>::max())) {  // beyond float's range
      EXPECT_EQ(got_exp[i], inf) << "exp(" << v << ")";
    } else {
      EXPECT_NEAR(got_exp[i], want, 3e-7 * want + 2e-45) << "exp(" << v << ")";
    }
  }
  EXPECT_TRUE(std::isnan(exp(f32(std::vector<double>{nan}, {1})).to_vector<float>()[0]));
  EXPECT_EQ(tanh(f32(std::vector<double>{inf, -inf}, {2})).to_vector<float>(), (std::vector<float>{1.0f, -1.0f}));
  EXPECT_TRUE(std::isnan(tanh(f32(std::vector<double>{nan}, {1})).to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(gelu_tanh(f32(std::vector<double>{nan}, {1})).to_vector<float>()[0]));
  // softmax: a -inf (masked) entry gets exactly 0; a row far below its maximum too.
  const auto sm = softmax(f32(std::vector<double>{0.0, -inf, -100.0, 1.0}, {1, 4}), -1).to_vector<float>();
  EXPECT_EQ(sm[1], 0.0f);
  EXPECT_EQ(sm[2], 0.0f);
  EXPECT_NEAR(sm[0], 1 / (1 + std::exp(1.0)), 1e-7);
}

TEST(OpsForward, CausalFillMasksAboveTheDiagonal) {
  Tensor x = f32({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
  expect_values(causal_fill(x, -1), {3, 4}, {1, -1, -1, -1, 5, 6, -1, -1, 9, 10, 11, -1}, 0);
  // Batched, on a transposed (non-contiguous) input.
  Tensor t = transpose(f32({1, 2, 3, 4}, {2, 2}), 0, 1);  // [[1, 3], [2, 4]]
  expect_values(causal_fill(unsqueeze(t, 0), 0), {1, 2, 2}, {1, 0, 2, 4}, 0);
  EXPECT_THROW(causal_fill(f32({1, 2}, {2}), 0), Error);
}

// causal_softmax is softmax(causal_fill(x * scale, -inf)): to the bit on float32 (both run the
// vectorised rows), to 1e-15 on float64, on square, wide, tall and transposed inputs; masked
// entries are exactly 0.
// causal_attention(qkv, s) is causal_softmax(q k^T, s) v, and its gradient the composite's, on
// contiguous input, on GPT's heads view of a [3, B*T, E] projection (whose output's transpose back
// to [B, T, H, D] is contiguous), without batch dims, with one position, with the last dim strided
// (copied for BLAS), with sizes that fill the float kernel's 6 x 16 blocks and 8 x 8 transposes
// and leave tails (T 37 and D 32; T 19 and D 12), and with T past that kernel's limit (BLAS). The
// backward from the forward's saved probabilities and the one recomputing them give the same bits.
TEST(OpsForward, CausalAttentionIsSoftmaxOfScoresTimesValues) {
  manual_seed(11);
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 2e-6 : 1e-13;
    const std::vector<Tensor> inputs = {randn({3, 2, 3, 7, 4}, dt),
                                        permute(reshape(randn({3, 10, 6}, dt), {3, 2, 5, 3, 2}), {0, 1, 3, 2, 4}),
                                        randn({3, 6, 5}, dt), randn({3, 2, 1, 4}, dt),
                                        transpose(randn({3, 2, 4, 6}, dt), -1, -2), randn({3, 1, 2, 37, 32}, dt),
                                        randn({3, 1, 19, 12}, dt), randn({3, 1, 530, 3}, dt)};
    for (const Tensor& x_in : inputs) {
      const double scale = 0.45;
      auto part = [](const Tensor& x, int64_t i) { return squeeze(narrow(x, 0, i, 1), 0); };
      Tensor x1 = x_in.detach().set_requires_grad(), x2 = x_in.detach().set_requires_grad();
      const Tensor got = causal_attention(x1, scale);
      const Tensor want = matmul(causal_softmax(matmul_nt(part(x2, 0), part(x2, 1)), scale), part(x2, 2));
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_THAT(got.to_vector<double>(), Pointwise(DoubleNear(tol), want.to_vector<double>())) << describe(x_in);
      const Tensor g = randn(got.shape(), dt);
      sum(mul(got, g)).backward();
      sum(mul(want, g)).backward();
      EXPECT_THAT(x1.grad().to_vector<double>(), Pointwise(DoubleNear(5 * tol), x2.grad().to_vector<double>()))
          << describe(x_in);
      Tensor probs;
      (void)kernels::causal_attention(x_in, scale, &probs);
      EXPECT_EQ(kernels::causal_attention_backward(x_in, g, scale, probs).to_vector<double>(),
                kernels::causal_attention_backward(x_in, g, scale, Tensor()).to_vector<double>());
    }
    EXPECT_TRUE(transpose(causal_attention(inputs[1], 1.0), 1, 2).is_contiguous());
  }
}

TEST(OpsForward, CausalSoftmaxIsScaleMaskSoftmax) {
  const double inf = std::numeric_limits<double>::infinity();
  manual_seed(5);
  for (DType dt : {kFloat32, kFloat64}) {
    for (const Tensor& x : {randn({2, 3, 17, 17}, dt), randn({5, 11}, dt), randn({9, 4}, dt),
                            transpose(randn({3, 6, 6}, dt), 1, 2)}) {
      const auto want = softmax(causal_fill(x * 0.3, -inf), -1).to_vector<double>();
      const auto got = causal_softmax(x, 0.3).to_vector<double>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        if (dt == kFloat32) {
          EXPECT_EQ(got[i], want[i]) << describe(x) << " at " << i;
        } else {
          EXPECT_NEAR(got[i], want[i], 1e-15) << describe(x) << " at " << i;
        }
        if (want[i] == 0.0) {
          EXPECT_EQ(got[i], 0.0);
        }
      }
    }
  }
  const auto y = causal_softmax(f32({1, 2, 3, 4}, {2, 2}), 1.0).to_vector<float>();
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_NEAR(y[2], 1 / (1 + std::exp(1.0)), 1e-7);
  EXPECT_THROW(causal_softmax(f32({1, 2}, {2}), 1.0), Error);
}

TEST(OpsForward, UnaryOnFloat32AndNonContiguous) {
  Tensor a = f32({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = transpose(a, 0, 1);
  EXPECT_EQ(exp(t).dtype(), kFloat32);
  expect_values(exp(t), {3, 2},
                {1, std::exp(3.0), std::exp(1.0), std::exp(4.0), std::exp(2.0), std::exp(5.0)},
                1e-4);
}

// ---- matmul -------------------------------------------------------------------------------------

// Reference: [B, n, k] @ [B, k, m] (row-major values, B may be 1).
V reference_matmul(const V& a, const V& b, int64_t batch, int64_t n, int64_t k, int64_t m) {
  V out(batch * n * m, 0.0);
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += a[z * n * k + i * k + p] * b[z * k * m + p * m + j];
        out[z * n * m + i * m + j] = s;
      }
  return out;
}

TEST(OpsForward, Matmul2D) {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = f32({7, 8, 9, 10, 11, 12}, {3, 2});
  expect_values(matmul(a, b), {2, 2}, {58, 64, 139, 154});
}

TEST(OpsForward, MatmulBatched) {
  manual_seed(3);
  Tensor a = randn({4, 2, 3}, kFloat64), b = randn({4, 3, 5}, kFloat64);
  expect_values(matmul(a, b), {4, 2, 5}, reference_matmul(values(a), values(b), 4, 2, 3, 5), 1e-12);
}

TEST(OpsForward, MatmulBroadcastBatch) {
  manual_seed(4);
  Tensor a = randn({2, 1, 3, 4}, kFloat64), b = randn({5, 4, 2}, kFloat64);
  Tensor c = matmul(a, b);  // [2, 5, 3, 2]
  ASSERT_EQ(c.shape(), (Shape{2, 5, 3, 2}));
  V av = values(a), bv = values(b), cv = values(c);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      V ai(av.begin() + i * 12, av.begin() + (i + 1) * 12);
      V bj(bv.begin() + j * 8, bv.begin() + (j + 1) * 8);
      V ref = reference_matmul(ai, bj, 1, 3, 4, 2);
      V got(cv.begin() + (i * 5 + j) * 6, cv.begin() + (i * 5 + j + 1) * 6);
      EXPECT_THAT(got, Pointwise(DoubleNear(1e-12), ref)) << "batch " << i << "," << j;
    }
  // A 2-D operand broadcasts against a batch.
  Tensor w = randn({4, 3}, kFloat64);
  Tensor d = matmul(narrow(a, 1, 0, 1), w);  // [2, 1, 3, 4] @ [4, 3]
  EXPECT_EQ(d.shape(), (Shape{2, 1, 3, 3}));
  V dref = reference_matmul(
      av,
      [&] {
        V w2 = values(w);
        V rep = w2;
        rep.insert(rep.end(), w2.begin(), w2.end());
        return rep;
      }(),
      2, 3, 4, 3);
  EXPECT_THAT(values(d), Pointwise(DoubleNear(1e-12), dref));
}

// A bias inside the GEMM equals adding it afterwards, on each of the kernel's paths: few rows
// (the transposed product), one GEMM over a batch's rows, a GEMM per batch entry, and k = 0
// (the product is zeros, the output the bias), for biases of every broadcast shape.
TEST(OpsForward, MatmulNtBiasEqualsAddingTheBias) {
  manual_seed(6);
  struct Case {
    Shape a, b, bias;
  };
  for (const Case& c : std::vector<Case>{{{2, 4}, {9, 4}, {9}},           // 4n <= m: C^T written
                                         {{6, 4}, {3, 4}, {6, 1}},        // column bias
                                         {{2, 6, 4}, {3, 4}, {3}},        // rows of a batch, one GEMM
                                         {{2, 6, 4}, {2, 3, 4}, {2, 1, 3}},  // a GEMM per entry
                                         {{3, 6, 4}, {3, 3, 4}, {6, 3}},
                                         {{2, 5, 0}, {2, 3, 0}, {3}},     // k = 0
                                         {{5, 0}, {3, 0}, {5, 3}}}) {
    const Tensor a = randn(c.a, kFloat64), b = randn(c.b, kFloat64), bias = randn(c.bias, kFloat64);
    const Tensor want = add(matmul_nt(a, b), bias), got = matmul_nt(a, b, bias);
    ASSERT_EQ(got.shape(), want.shape()) << shape_str(c.a);
    EXPECT_THAT(values(got), Pointwise(DoubleNear(1e-12), values(want))) << shape_str(c.a) << " bias " << shape_str(c.bias);
  }
}

TEST(OpsForward, MatmulTransposedAndNarrowedInputs) {
  manual_seed(5);
  Tensor a = randn({3, 4}, kFloat64), b = randn({5, 4}, kFloat64);
  Tensor bt = transpose(b, 0, 1);  // [4, 5], non-contiguous
  ASSERT_FALSE(bt.is_contiguous());
  V ref = reference_matmul(values(a), values(contiguous(bt)), 1, 3, 4, 5);
  expect_values(matmul(a, bt), {3, 5}, ref, 1e-12);
  // Both transposed.
  Tensor at = transpose(contiguous(transpose(a, 0, 1)), 0, 1);  // a's values, column-major
  ASSERT_FALSE(at.is_contiguous());
  expect_values(matmul(at, bt), {3, 5}, ref, 1e-12);
  // A column window of a wider matrix (row stride > columns) and a batched transpose.
  Tensor wide = randn({3, 7}, kFloat64);
  Tensor window = narrow(wide, 1, 2, 4);
  expect_values(matmul(window, bt), {3, 5},
                reference_matmul(values(window), values(contiguous(bt)), 1, 3, 4, 5), 1e-12);
  Tensor batch = randn({2, 4, 3}, kFloat64);
  Tensor bt3 = transpose(batch, 1, 2);  // [2, 3, 4]
  Tensor rhs = randn({2, 4, 2}, kFloat64);
  expect_values(matmul(bt3, rhs), {2, 3, 2},
                reference_matmul(values(contiguous(bt3)), values(rhs), 2, 3, 4, 2), 1e-12);
  // Batch dim in the middle of the storage: [k, B, n] permuted to [B, n, k].
  Tensor kbn = randn({4, 2, 3}, kFloat64);
  Tensor bnk = permute(kbn, {1, 2, 0});
  expect_values(matmul(bnk, rhs), {2, 3, 2},
                reference_matmul(values(contiguous(bnk)), values(rhs), 2, 3, 4, 2), 1e-12);
  Tensor lhs = transpose(rhs, 1, 2), bkn = permute(kbn, {1, 0, 2});  // [2, 2, 4] @ [2, 4, 3]
  expect_values(matmul(lhs, bkn), {2, 2, 3},
                reference_matmul(values(contiguous(lhs)), values(contiguous(bkn)), 2, 2, 4, 3),
                1e-12);
}

TEST(OpsForward, MatmulVectorOperands) {
  Tensor m = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor v3 = f64({1, 0, -1}, {3}), v2 = f64({1, 2}, {2});
  expect_values(matmul(m, v3), {2}, {-2, -2});     // [2,3] @ [3] -> [2]
  expect_values(matmul(v2, m), {3}, {9, 12, 15});  // [2] @ [2,3] -> [3]
  Tensor dot = matmul(v3, f64({4, 5, 6}, {3}));    // [3] @ [3] -> scalar
  EXPECT_EQ(dot.dim(), 0);
  EXPECT_DOUBLE_EQ(dot.item<double>(), -2.0);
  Tensor batch = reshape(arange(0.0, 12.0, 1.0, kFloat64), {2, 2, 3});
  expect_values(matmul(batch, v3), {2, 2}, {-2, -2, -2, -2});  // [2,2,3] @ [3] -> [2,2]
  expect_values(matmul(v2, batch), {2, 3}, {6, 9, 12, 24, 27, 30});
}

// ---- reductions ---------------------------------------------------------------------------------

TEST(OpsForward, SumOverDims) {
  Tensor a = reshape(arange(0.0, 24.0, 1.0, kFloat64), {2, 3, 4});
  expect_values(sum(a), {}, {276});
  expect_values(sum(a, {}, true), {1, 1, 1}, {276});
  expect_values(sum(a, {0}), {3, 4}, {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});
  expect_values(sum(a, {2}), {2, 3}, {6, 22, 38, 54, 70, 86});
  expect_values(sum(a, {-1}, true), {2, 3, 1}, {6, 22, 38, 54, 70, 86});
  expect_values(sum(a, {0, 2}), {3}, {60, 92, 124});
  expect_values(sum(a, {2, 0}, true), {1, 3, 1}, {60, 92, 124});
  expect_values(sum(transpose(a, 0, 2), {0}), {3, 2}, {6, 54, 22, 70, 38, 86});
  Tensor ints = i64({1, 2, 3, 4}, {2, 2});
  EXPECT_THAT(sum(ints, {1}).to_vector<int64_t>(), ElementsAre(3, 7));
}

TEST(OpsForward, MeanOverDims) {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(mean(a), {}, {3.5});
  expect_values(mean(a, {0}), {3}, {2.5, 3.5, 4.5});
  expect_values(mean(a, {1}, true), {2, 1}, {2, 5});
  expect_values(mean(a, {0, 1}, true), {1, 1}, {3.5});
}

TEST(OpsForward, MaxOverDims) {
  Tensor a = f64({3, -1, 7, 2, 9, 0, -4, 5, 1, 8, 6, -2}, {2, 2, 3});
  expect_values(max(a), {}, {9});
  expect_values(max(a, {}, true), {1, 1, 1}, {9});
  expect_values(max(a, {2}), {2, 2}, {7, 9, 5, 8});
  expect_values(max(a, {2}, true), {2, 2, 1}, {7, 9, 5, 8});
  expect_values(max(a, {0}), {2, 3}, {3, 5, 7, 8, 9, 0});
  expect_values(max(a, {0, 2}), {2}, {7, 9});
  expect_values(max(a, {0, 2}, true), {1, 2, 1}, {7, 9});
  expect_values(max(a, {-2}), {2, 3}, {3, 9, 7, 8, 6, 1});
}

TEST(OpsForward, Argmax) {
  Tensor a = f32({3, -1, 7, 2, 9, 0, 5, 5, 1}, {3, 3});
  Tensor r = argmax(a, 1);
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_EQ(r.shape(), (Shape{3}));
  EXPECT_THAT(r.to_vector<int64_t>(), ElementsAre(2, 1, 0));  // first on ties
  EXPECT_THAT(argmax(a, 0).to_vector<int64_t>(), ElementsAre(2, 1, 0));
  Tensor k = argmax(a, -1, true);
  EXPECT_EQ(k.shape(), (Shape{3, 1}));
  EXPECT_THAT(argmax(transpose(a, 0, 1), 1).to_vector<int64_t>(), ElementsAre(2, 1, 0));
  EXPECT_FALSE(argmax(randn({3}).set_requires_grad(), 0).requires_grad());
}

TEST(OpsForward, SumTo) {
  Tensor a = reshape(arange(0.0, 12.0, 1.0, kFloat64), {3, 4});
  expect_values(sum_to(a, {4}), {4}, {12, 15, 18, 21});
  expect_values(sum_to(a, {3, 1}), {3, 1}, {6, 22, 38});
  expect_values(sum_to(a, {1, 1}), {1, 1}, {66});
  EXPECT_TRUE(sum_to(a, {3, 4}).same(a));
}

// ---- shape ops ----------------------------------------------------------------------------------

TEST(OpsForward, ReshapeViewFlattenUnsqueezeSqueeze) {
  Tensor a = reshape(arange(0.0, 24.0), {2, 3, 4});
  EXPECT_EQ(reshape(a, {-1}).shape(), (Shape{24}));
  EXPECT_EQ(reshape(a, {4, -1}).shape(), (Shape{4, 6}));
  EXPECT_EQ(view(a, {6, 4}).shape(), (Shape{6, 4}));
  EXPECT_EQ(values(reshape(a, {-1})), values(a));
  EXPECT_EQ(flatten(a).shape(), (Shape{24}));
  EXPECT_EQ(flatten(a, 1).shape(), (Shape{2, 12}));
  EXPECT_EQ(flatten(a, 0, 1).shape(), (Shape{6, 4}));
  EXPECT_EQ(unsqueeze(a, 0).shape(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(unsqueeze(a, -1).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(unsqueeze(a, 2).shape(), (Shape{2, 3, 1, 4}));
  EXPECT_EQ(squeeze(unsqueeze(a, 1), 1).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(squeeze(unsqueeze(a, -1), -1).shape(), (Shape{2, 3, 4}));
  EXPECT_THROW(squeeze(a, 0), Error);  // extent 2, not 1
  // Reshaping a transposed view copies in logical order.
  Tensor t = transpose(reshape(arange(0.0, 6.0), {2, 3}), 0, 1);
  expect_values(reshape(t, {-1}), {6}, {0, 3, 1, 4, 2, 5});
  EXPECT_THROW(view(t, {6}), Error);  // view needs contiguous
}

TEST(OpsForward, TransposePermute) {
  Tensor a = reshape(arange(0.0, 6.0), {2, 3});
  expect_values(transpose(a, 0, 1), {3, 2}, {0, 3, 1, 4, 2, 5});
  expect_values(transpose(a, -1, -2), {3, 2}, {0, 3, 1, 4, 2, 5});
  Tensor b = reshape(arange(0.0, 24.0), {2, 3, 4});
  Tensor p = permute(b, {1, 2, 0});
  ASSERT_EQ(p.shape(), (Shape{3, 4, 2}));
  V expect;
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i) expect.push_back(i * 12 + j * 4 + k);
  EXPECT_EQ(values(p), expect);
  EXPECT_EQ(values(permute(p, {2, 0, 1})), values(b));  // inverse permutation
  EXPECT_EQ(values(permute(b, {-1, 0, 1})), values(permute(b, {2, 0, 1})));
}

TEST(OpsForward, NarrowAndSlice) {
  Tensor a = reshape(arange(0.0, 20.0), {4, 5});
  expect_values(narrow(a, 1, 1, 3), {4, 3}, {1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18});
  expect_values(narrow(a, -2, 2, 2), {2, 5}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19});
  expect_values(slice(a, 1, 1, -1), {4, 3}, {1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18});
  expect_values(slice(a, 0, -1, 4), {1, 5}, {15, 16, 17, 18, 19});
  expect_values(slice(a, 0, -3, -1), {2, 5}, {5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
  EXPECT_EQ(slice(a, 1, 3, 1).shape(), (Shape{4, 0}));       // empty when end < start
  EXPECT_EQ(slice(a, 1, -100, 100).shape(), (Shape{4, 5}));  // clamped
}

TEST(OpsForward, Expand) {
  expect_values(expand(f32({1, 2}, {2}), {3, 2}), {3, 2}, {1, 2, 1, 2, 1, 2});
  expect_values(expand(f32({1, 2}, {2, 1}), {2, 3}), {2, 3}, {1, 1, 1, 2, 2, 2});
}

TEST(OpsForward, Cat) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2}), b = f32({5, 6}, {1, 2}), c = f32({7, 8, 9, 10}, {2, 2});
  expect_values(cat({a, b}, 0), {3, 2}, {1, 2, 3, 4, 5, 6});
  expect_values(cat({a, c}, 1), {2, 4}, {1, 2, 7, 8, 3, 4, 9, 10});
  expect_values(cat({a, c}, -1), {2, 4}, {1, 2, 7, 8, 3, 4, 9, 10});
  // A non-contiguous piece.
  expect_values(cat({transpose(a, 0, 1), c}, 0), {4, 2}, {1, 3, 2, 4, 7, 8, 9, 10});
  expect_values(cat({a}, 0), {2, 2}, {1, 2, 3, 4});
}

TEST(OpsForward, GatherAndScatterAdd) {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor idx1 = i64({2, 0, 1, 1}, {2, 2});
  expect_values(gather(a, 1, idx1), {2, 2}, {3, 1, 5, 5});  // out[i][j] = a[i][idx[i][j]]
  Tensor idx0 = i64({1, 0, 1}, {1, 3});
  expect_values(gather(a, 0, idx0), {1, 3}, {4, 2, 6});  // out[i][j] = a[idx[i][j]][j]
  expect_values(gather(transpose(a, 0, 1), 1, i64({1, 0, 0}, {3, 1})), {3, 1}, {4, 2, 3});

  // scatter_add is gather's adjoint: repeated indices accumulate.
  Tensor src = f32({10, 20, 30, 40}, {2, 2});
  expect_values(scatter_add({2, 3}, 1, idx1, src), {2, 3}, {20, 0, 10, 0, 70, 0});
  expect_values(scatter_add({2, 3}, 0, idx0, f32({1, 2, 3}, {1, 3})), {2, 3}, {0, 2, 0, 1, 0, 3});
}

// ---- neural-network functions -------------------------------------------------------------------

TEST(OpsForward, SoftmaxAndLogSoftmax) {
  const V x = {1, 2, 3, -1, 0, 4};
  Tensor a = f64(x, {2, 3});
  V expect_rows;
  for (int r = 0; r < 2; ++r) {
    double z = 0;
    for (int j = 0; j < 3; ++j) z += std::exp(x[r * 3 + j]);
    for (int j = 0; j < 3; ++j) expect_rows.push_back(std::exp(x[r * 3 + j]) / z);
  }
  expect_values(softmax(a, 1), {2, 3}, expect_rows, 1e-12);
  expect_values(softmax(a, -1), {2, 3}, expect_rows, 1e-12);
  expect_values(log_softmax(a, 1), {2, 3}, map(expect_rows, [](double v) { return std::log(v); }),
                1e-12);
  // Along dim 0 each column sums to 1.
  expect_values(sum(softmax(a, 0), {0}), {3}, {1, 1, 1}, 1e-12);
  const double c0 = std::exp(1.0) / (std::exp(1.0) + std::exp(-1.0));
  EXPECT_NEAR(values(softmax(a, 0))[0], c0, 1e-12);
  // On a transposed input.
  expect_values(softmax(transpose(a, 0, 1), 0), {3, 2},
                {expect_rows[0], expect_rows[3], expect_rows[1], expect_rows[4], expect_rows[2],
                 expect_rows[5]},
                1e-12);
}

TEST(OpsForward, SoftmaxRowsSumToOneAndStableForLargeValues) {
  manual_seed(11);
  Tensor r = randn({5, 7});
  expect_values(sum(softmax(r, 1), {1}), {5}, {1, 1, 1, 1, 1}, 1e-5);
  Tensor big = f32({1000, 1001, 1002, -1000, 0, 1000}, {2, 3});
  Tensor s = softmax(big, 1);
  for (double v : values(s)) EXPECT_TRUE(std::isfinite(v));
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  expect_values(s, {2, 3}, {1 / z, std::exp(1.0) / z, std::exp(2.0) / z, 0, 0, 1}, 1e-6);
  Tensor ls = log_softmax(big, 1);
  for (double v : values(ls)) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(values(ls)[0], -std::log(z), 1e-4);
  EXPECT_NEAR(values(ls)[3], -2000, 1e-2);
  EXPECT_NEAR(values(ls)[5], 0, 1e-6);
}

TEST(OpsForward, Embedding) {
  Tensor w = f32({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  Tensor e = embedding(w, i64({3, 0, 3, 1, 2, 2}, {2, 3}));
  expect_values(e, {2, 3, 2}, {30, 31, 0, 1, 30, 31, 10, 11, 20, 21, 20, 21});
  expect_values(embedding(w, i64({2}, {})), {2}, {20, 21});
}

TEST(OpsForward, LayerNorm) {
  const V x = {1, 2, 3, 4, 10, 0, -10, 4};
  Tensor a = f64(x, {2, 4});
  Tensor w = f64({1, 2, 0.5, -1}, {4}), b = f64({0, 1, 2, 3}, {4});
  const double eps = 1e-5;
  V plain, affine;
  for (int r = 0; r < 2; ++r) {
    double mu = 0, var = 0;
    for (int j = 0; j < 4; ++j) mu += x[r * 4 + j] / 4;
    for (int j = 0; j < 4; ++j) var += (x[r * 4 + j] - mu) * (x[r * 4 + j] - mu) / 4;  // biased
    for (int j = 0; j < 4; ++j) {
      const double n = (x[r * 4 + j] - mu) / std::sqrt(var + eps);
      plain.push_back(n);
      affine.push_back(n * values(w)[j] + values(b)[j]);
    }
  }
  expect_values(layer_norm(a, {4}, Tensor(), Tensor()), {2, 4}, plain, 1e-12);
  expect_values(layer_norm(a, {4}, w, b), {2, 4}, affine, 1e-12);
  // Over the last two dims at once: a single group of all 8 values.
  Tensor whole = layer_norm(reshape(a, {1, 2, 4}), {2, 4}, Tensor(), Tensor(), 0.0);
  EXPECT_NEAR(values(mean(whole))[0], 0.0, 1e-12);
  EXPECT_NEAR(values(mean(mul(whole, whole)))[0], 1.0, 1e-12);
}

// RMS norm: x / sqrt(mean(x^2) + eps) * w per row, the 16-bit input normalised in float32 and
// rounded before the weight (Hugging Face's LlamaRMSNorm).
TEST(OpsForward, RmsNorm) {
  const V x = {1, 2, 3, 4, 10, 0, -10, 4};
  const Tensor a = f64(x, {2, 4}), w = f64({1, 2, 0.5, -1}, {4});
  const double eps = 1e-6;
  V plain, scaled;
  for (int r = 0; r < 2; ++r) {
    double ms = 0;
    for (int j = 0; j < 4; ++j) ms += x[r * 4 + j] * x[r * 4 + j] / 4;
    for (int j = 0; j < 4; ++j) {
      plain.push_back(x[r * 4 + j] / std::sqrt(ms + eps));
      scaled.push_back(plain.back() * values(w)[j]);
    }
  }
  expect_values(rms_norm(a, Tensor(), eps), {2, 4}, plain, 1e-12);
  expect_values(rms_norm(a, w, eps), {2, 4}, scaled, 1e-12);
  const Tensor narrow = rms_norm(to_dtype(a, kBFloat16), to_dtype(w, kBFloat16), eps);
  const Tensor rounded = mul(to_dtype(w, kBFloat16), to_dtype(rms_norm(to_dtype(to_dtype(a, kBFloat16), kFloat32),
                                                                       Tensor(), eps), kBFloat16));
  EXPECT_EQ(narrow.dtype(), kBFloat16);
  EXPECT_EQ(values(to_dtype(narrow, kFloat64)), values(to_dtype(rounded, kFloat64)));
}

// SiLU x / (1 + e^-x) and its slope, float32 through the vectorised exp, within a few ulps of the
// double-precision formula over the range; x itself far right, ~0 far left, NaN kept.
TEST(OpsForward, SiluOverTheRange) {
  std::vector<double> x = {0.0, 1e-30, 1e-8, 3.0, 20.0, 87.0, 88.5, 100.0, 1e4, 1e30};
  for (double v = -12.0; v <= 12.0; v += 0.017) x.push_back(v);
  const size_t n = x.size();
  for (size_t i = 0; i < n; ++i) x.push_back(-x[i]);
  const Tensor t = f32(x, {int64_t(x.size())});
  const std::vector<float> y = silu(t).to_vector<float>();
  Tensor leaf = t.detach().set_requires_grad();
  sum(silu(leaf)).backward();
  const std::vector<float> slope = leaf.grad().to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = double(float(x[i])), sg = 1 / (1 + std::exp(-v));
    EXPECT_NEAR(y[i], v * sg, 1e-6 * std::abs(v * sg) + 1e-37) << "silu(" << v << ")";
    EXPECT_NEAR(slope[i], sg * (1 + v * (1 - sg)), 2e-6 * std::abs(sg * (1 + v * (1 - sg))) + 1e-7) << "silu'(" << v << ")";
  }
  // swiglu(a, b) = silu(a) * b, its fused backward the same gradients as the two ops'.
  const Tensor a = t.detach().set_requires_grad(), b = randn(t.shape()).set_requires_grad();
  const Tensor a2 = t.detach().set_requires_grad(), b2 = b.detach().set_requires_grad();
  const Tensor w = randn(t.shape());
  const Tensor fused = swiglu(a, b), plain = mul(silu(a2), b2);
  EXPECT_EQ(fused.to_vector<float>(), plain.to_vector<float>());
  sum(mul(fused, w)).backward();
  sum(mul(plain, w)).backward();
  const std::vector<float> ga = a.grad().to_vector<float>(), ga2 = a2.grad().to_vector<float>();
  const std::vector<float> gb = b.grad().to_vector<float>(), gb2 = b2.grad().to_vector<float>();
  for (size_t i = 0; i < ga.size(); ++i) {
    EXPECT_NEAR(ga[i], ga2[i], 1e-6 * std::abs(ga2[i]) + 1e-30) << "swiglu d gate at " << x[i];
    EXPECT_NEAR(gb[i], gb2[i], 1e-6 * std::abs(gb2[i]) + 1e-30) << "swiglu d up at " << x[i];
  }
  const std::vector<double> f64_in = {-3.0, -0.5, 0.0, 2.0};
  std::vector<double> want;
  for (double v : f64_in) want.push_back(v / (1 + std::exp(-v)));
  expect_values(silu(f64(f64_in, {4})), {4}, want, 1e-15);
  EXPECT_TRUE(std::isnan(silu(f32(std::vector<double>{NAN}, {1})).to_vector<float>()[0]));
}

// The rotary embedding equals Hugging Face's composite x * cat(c, c) + rotate_half(x) * cat(s, s)
// on a transposed (heads) view, keeps that view's memory order, and its backward equals the
// composite's gradients for x, cos and sin.
TEST(OpsForward, RotaryEmbeddingIsTheComposite) {
  const Tensor x0 = randn({2, 5, 3, 8}, kFloat64), c0 = randn({5, 4}, kFloat64), s0 = randn({5, 4}, kFloat64);
  auto composite = [](const Tensor& x, const Tensor& c, const Tensor& s) {
    const Tensor half = cat({neg(slice(x, 3, 4, 8)), slice(x, 3, 0, 4)}, 3);
    return add(mul(x, cat({c, c}, 1)), mul(half, cat({s, s}, 1)));
  };
  std::vector<Tensor> fused = {x0.detach().set_requires_grad(), c0.detach().set_requires_grad(),
                               s0.detach().set_requires_grad()};
  std::vector<Tensor> plain = {x0.detach().set_requires_grad(), c0.detach().set_requires_grad(),
                               s0.detach().set_requires_grad()};
  const Tensor y = rotary_embedding(transpose(fused[0], 1, 2), fused[1], fused[2]);
  const Tensor want = composite(transpose(plain[0], 1, 2), plain[1], plain[2]);
  expect_values(y, {2, 3, 5, 8}, values(want), 1e-14);
  EXPECT_EQ(y.strides(), transpose(x0, 1, 2).strides());  // x's memory order
  const Tensor w = randn({2, 3, 5, 8}, kFloat64);
  sum(mul(y, w)).backward();
  sum(mul(want, w)).backward();
  for (size_t i = 0; i < 3; ++i) expect_values(fused[i].grad(), plain[i].grad().shape(), values(plain[i].grad()), 1e-13);
}

TEST(OpsForward, DropoutIdentityCases) {
  Tensor a = randn({4, 5});
  EXPECT_EQ(values(dropout(a, 0.0)), values(a));
  EXPECT_EQ(values(dropout(a, 0.7, /*training=*/false)), values(a));
  EXPECT_THROW(dropout(a, 1.0), Error);
  EXPECT_THROW(dropout(a, -0.1), Error);
}

TEST(OpsForward, DropoutScalesKeptElementsAndDropsAboutP) {
  manual_seed(21);
  const double p = 0.3;
  Tensor a = add(rand({200, 500}, kFloat64), 1.0);  // in [1, 2): never 0 by chance
  V in = values(a), out = values(dropout(a, p));
  int64_t dropped = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (out[i] == 0.0) {
      ++dropped;
    } else {
      EXPECT_NEAR(out[i], in[i] / (1 - p), 1e-12) << "element " << i;
    }
  }
  EXPECT_NEAR(double(dropped) / double(in.size()), p, 0.01);
}

TEST(OpsForward, DropoutIsSeeded) {
  Tensor a = ones({64});
  manual_seed(8);
  V first = values(dropout(a, 0.5));
  V second = values(dropout(a, 0.5));
  manual_seed(8);
  EXPECT_EQ(values(dropout(a, 0.5)), first);
  EXPECT_EQ(values(dropout(a, 0.5)), second);
  EXPECT_NE(first, second);
}

TEST(OpsForward, MseLoss) {
  Tensor in = f32({1, 2, 3, 4}, {2, 2}), target = f32({0, 2, 5, 3}, {2, 2});
  expect_values(mse_loss(in, target), {}, {(1.0 + 0 + 4 + 1) / 4});
}

TEST(OpsForward, CrossEntropyMatchesManual) {
  const V logits = {2.0, -1.0, 0.5, 0.1, 0.2, 3.0, -2.0, 1.0, 1.0, 0.0, 0.0, -0.5};
  const std::vector<int64_t> target = {0, 2, 1, 2};
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    double z = 0;
    for (int j = 0; j < 3; ++j) z += std::exp(logits[i * 3 + j]);
    total += -(logits[i * 3 + target[i]] - std::log(z));
  }
  Tensor loss = cross_entropy(f64(logits, {4, 3}), i64(target, {4}));
  expect_values(loss, {}, {total / 4}, 1e-12);
  // Extra leading dims: [2, 2, 3] logits with [2, 2] targets give the same mean.
  expect_values(cross_entropy(f64(logits, {2, 2, 3}), i64(target, {2, 2})), {}, {total / 4}, 1e-12);
}

// ---- casts and copies ---------------------------------------------------------------------------

TEST(OpsForward, ToDtype) {
  Tensor a = f32({1.5f, -2.75f, 3.0f}, {3});
  Tensor d = to_dtype(a, kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_THAT(d.to_vector<double>(), ElementsAre(1.5, -2.75, 3.0));
  Tensor i = to_dtype(a, kInt64);
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_THAT(i.to_vector<int64_t>(), ElementsAre(1, -2, 3));  // truncation toward zero
  Tensor back = to_dtype(i, kFloat32);
  EXPECT_THAT(back.to_vector<float>(), ElementsAre(1.0f, -2.0f, 3.0f));
  EXPECT_TRUE(to_dtype(a, kFloat32).same(a));  // no-op cast
  EXPECT_THAT(to_dtype(transpose(f64({1, 2, 3, 4}, {2, 2}), 0, 1), kFloat32).to_vector<float>(),
              ElementsAre(1, 3, 2, 4));
}

TEST(OpsForward, ContiguousAndCopy) {
  Tensor a = reshape(arange(0.0, 6.0), {2, 3});
  Tensor t = transpose(a, 0, 1);
  Tensor c = contiguous(t);
  EXPECT_TRUE(c.is_contiguous());
  expect_values(c, {3, 2}, {0, 3, 1, 4, 2, 5});

  Tensor dst = zeros({3, 2}, kFloat64);
  copy_(dst, t);  // converts dtype, reads strided
  EXPECT_THAT(values(dst), ElementsAre(0, 3, 1, 4, 2, 5));
  Tensor window = narrow(zeros({2, 4}), 1, 1, 2);
  copy_(window, f32({1, 2, 3, 4}, {2, 2}));  // writes through a strided view
  EXPECT_THAT(values(window), ElementsAre(1, 2, 3, 4));
  EXPECT_THROW(copy_(dst, a), Error);
}

// ---- comparisons, bool and where -----------------------------------------------------------------

// Elementwise comparisons give bool tensors (torch's semantics: broadcasting, promotion, NaN unequal
// to everything), the C++ operators are the same ops, and bool tensors print, cast, count, mask
// and select.
TEST(OpsForward, ComparisonsGiveBoolTensors) {
  const Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3}), row = f32({2, 2, 7}, {3});
  const Tensor lt_row = a < row;
  EXPECT_EQ(lt_row.dtype(), kBool);
  expect_values(lt_row, {2, 3}, {1, 0, 1, 0, 0, 1});
  expect_values(a == row, {2, 3}, {0, 1, 0, 0, 0, 0});
  expect_values(a != row, {2, 3}, {1, 0, 1, 1, 1, 1});
  expect_values(a <= row, {2, 3}, {1, 1, 1, 0, 0, 1});
  expect_values(a > 3.0, {2, 3}, {0, 0, 0, 1, 1, 1});
  expect_values(a >= 3.0, {2, 3}, {0, 0, 1, 1, 1, 1});
  expect_values(ge(a, row), {2, 3}, {0, 1, 0, 1, 1, 0});
  expect_values(gt(a, row), {2, 3}, {0, 0, 0, 1, 1, 0});
  expect_values(le(a, 2.0), {2, 3}, {1, 1, 0, 0, 0, 0});
  // Promotion: int64 against float32, int64 against a fraction, NaN.
  expect_values(eq(i64({1, 2, 3}, {3}), f32({1, 0, 3}, {3})), {3}, {1, 0, 1});
  expect_values(lt(i64({1, 2, 3}, {3}), 2.5), {3}, {1, 1, 0});
  // A number an integer or bool tensor cannot hold is not cast into it (torch's promotion).
  const Tensor flags = to_dtype(i64({0, 1, 1}, {3}), kBool);
  expect_values(eq(flags, 2.0), {3}, {0, 0, 0});
  expect_values(lt(flags, 2.0), {3}, {1, 1, 1});
  expect_values(gt(flags, -1.0), {3}, {1, 1, 1});
  expect_values(lt(i64({1, -5}, {2}), INFINITY), {2}, {1, 1});
  expect_values(gt(i64({1, -5}, {2}), 1e30), {2}, {0, 0});
  const Tensor nan = f64({NAN, 1}, {2});
  expect_values(eq(nan, nan), {2}, {0, 1});
  expect_values(ne(nan, nan), {2}, {1, 0});
  // Printing, casts, counting.
  EXPECT_THAT(lt_row.to_string(), ::testing::HasSubstr("[[True, False, True],"));
  EXPECT_THAT(lt_row.to_string(), ::testing::HasSubstr("dtype=bool"));
  expect_values(to_dtype(lt_row, kFloat32), {2, 3}, {1, 0, 1, 0, 0, 1});
  expect_values(to_dtype(f32({0, -2, 0.5}, {3}), kBool), {3}, {0, 1, 1});
  const Tensor count = sum(lt_row);
  EXPECT_EQ(count.dtype(), kInt64);
  EXPECT_EQ(count.item<int64_t>(), 3);
  expect_values(sum(lt_row, {1}), {2}, {2, 1});
  expect_values(mean(to_dtype(lt_row, kFloat32)), {}, {0.5});
  EXPECT_THAT(testing::error_of([&] { mean(lt_row); }), ::testing::HasSubstr("[mean] expects a floating tensor"));
  EXPECT_THAT(testing::error_of([&] { exp(lt_row); }), ::testing::HasSubstr("[exp] expects a floating tensor"));
  EXPECT_THAT(testing::error_of([&] { Tensor(lt_row).set_requires_grad(); }), ::testing::HasSubstr("only floating tensors"));
  // Logical ops.
  expect_values(logical_not(lt_row), {2, 3}, {0, 1, 0, 1, 1, 0});
  expect_values(logical_and(lt_row, a > 2.0), {2, 3}, {0, 0, 1, 0, 0, 1});
  expect_values(logical_or(lt_row, a > 4.0), {2, 3}, {1, 0, 1, 0, 1, 1});
  // equal / allclose: whole-tensor answers.
  EXPECT_TRUE(equal(a, f32({1, 2, 3, 4, 5, 6}, {2, 3})));
  EXPECT_FALSE(equal(a, f32({1, 2, 3, 4, 5, 7}, {2, 3})));
  EXPECT_FALSE(equal(a, f32({1, 2, 3}, {3})));
  EXPECT_TRUE(allclose(a, a + 1e-7));
  EXPECT_FALSE(allclose(a, a + 1e-3));
  EXPECT_TRUE(allclose(a, a + 1e-3, 0.0, 2e-3));
  EXPECT_FALSE(allclose(nan, nan));
  EXPECT_TRUE(std::isnan(relu(nan).to_vector<double>()[0]) && std::isnan(abs(nan).to_vector<double>()[0]))
      << "relu and abs keep NaN, as torch's";
  EXPECT_TRUE(allclose(nan, nan, 1e-5, 1e-8, true));
  const Tensor inf = f64({INFINITY}, {1});
  EXPECT_FALSE(allclose(f64({1}, {1}), inf)) << "an infinity is close to nothing finite";
  EXPECT_FALSE(allclose(mul(inf, -1.0), inf));
  EXPECT_TRUE(allclose(inf, inf));
}

// int32, int8 and uint8 are storage: they cast (wrapping as C++ converts in range), compare,
// select, count and print; arithmetic in them is an error naming the cast.
TEST(OpsForward, NarrowIntegersStoreCastCompareAndSelect) {
  const Tensor a = f32({-3, 0, 5, 127}, {4});
  for (DType dt : {kInt32, kInt8}) {
    const Tensor n = to_dtype(a, dt);
    EXPECT_EQ(n.dtype(), dt);
    expect_values(n, {4}, {-3, 0, 5, 127});
    expect_values(to_dtype(n, kFloat64), {4}, {-3, 0, 5, 127});
    expect_values(n > 0.0, {4}, {0, 0, 1, 1});
    expect_values(eq(n, to_dtype(a, kInt64)), {4}, {1, 1, 1, 1});
    expect_values(where(n > 0.0, n, 7.0), {4}, {7, 7, 5, 127});
    EXPECT_EQ(sum(n).dtype(), kInt64);
    EXPECT_EQ(sum(n).item<int64_t>(), 129);
    EXPECT_THAT(n.to_string(), ::testing::HasSubstr(std::string("[-3, 0, 5, 127], shape=[4], dtype=") + dtype_name(dt)));
    EXPECT_THAT(testing::error_of([&] { add(n, n); }), ::testing::HasSubstr("[add] has no " + std::string(dtype_name(dt)) +
                                                                              " kernel (float32, float64 and int64 only): cast it"));
  }
  const Tensor u = to_dtype(f32({0, 200, 255}, {3}), kUInt8);
  expect_values(u, {3}, {0, 200, 255});
  expect_values(u >= 200.0, {3}, {0, 1, 1});
  EXPECT_THAT(testing::error_of([&] { masked_fill(u, u > 0.0, 300.0); }),
              ::testing::HasSubstr("[masked_fill] the value 300 is not a uint8 value"));
}

TEST(OpsForward, WhereAndMaskedFillTakeBoolMasks) {
  const Tensor a = f32({1, -2, 3, -4, 5, -6}, {2, 3}), b = f32({10, 20, 30}, {3});
  const Tensor pos = a > 0.0;
  expect_values(where(pos, a, b), {2, 3}, {1, 20, 3, 10, 5, 30});
  expect_values(where(pos, a, 0.0), {2, 3}, {1, 0, 3, 0, 5, 0});
  expect_values(where(pos, -1.0, a), {2, 3}, {-1, -2, -1, -4, -1, -6});
  expect_values(where(b > 15.0, b, b * 0.5), {3}, {5, 20, 30});
  expect_values(masked_fill(a, pos, 9.0), {2, 3}, {9, -2, 9, -4, 9, -6});
  expect_values(masked_fill(a, b > 15.0, 0.0), {2, 3}, {1, 0, 0, -4, 0, 0});  // the mask broadcast
  expect_values(masked_fill(a, i64({1, 0, 0, 0, 0, 1}, {2, 3}), 7.0), {2, 3}, {7, -2, 3, -4, 5, 7});  // int64 masks
  // An integer operand with a number it cannot hold: where promotes to float32, masked_fill refuses.
  const Tensor ints = i64({1, 2, 3}, {3});
  const Tensor half = where(ints > 1.0, ints, 0.5);
  EXPECT_EQ(half.dtype(), kFloat32);
  expect_values(half, {3}, {0.5, 2, 3});
  EXPECT_EQ(where(ints > 1.0, ints, 0.0).dtype(), kInt64);
  EXPECT_THAT(testing::error_of([&] { masked_fill(ints, ints > 1.0, 0.5); }),
              ::testing::HasSubstr("[masked_fill] the value 0.5 is not a int64 value"));
  EXPECT_THAT(testing::error_of([&] { where(a, a, b); }),
              ::testing::HasSubstr("[where] the condition must be bool (or int64, non-zero meaning true), got float32"));
  EXPECT_THAT(testing::error_of([&] { where(pos, a, to_dtype(b, kFloat64)); }),
              ::testing::HasSubstr("[where] the two operands differ in dtype"));
  EXPECT_THAT(testing::error_of([&] { masked_fill(b, pos, 1.0); }), ::testing::HasSubstr("[masked_fill]"));
  // Gradients go to the side taken.
  const Tensor x = f64({1, -2, 3}, {3}).set_requires_grad(), y = f64({0, 0, 5}, {3}).set_requires_grad();
  sum(where(x > y, x, y) * 2.0).backward();
  expect_values(x.grad(), {3}, {2, 0, 0});
  expect_values(y.grad(), {3}, {0, 2, 2});
}

// ---- edge cases ---------------------------------------------------------------------------------

TEST(OpsForward, ScalarsAndEmptyTensors) {
  Tensor s = full({}, 3.0);
  EXPECT_EQ(flatten(s).shape(), (Shape{1}));
  EXPECT_EQ(unsqueeze(s, 0).shape(), (Shape{1}));
  expect_values(sum(s), {}, {3});
  expect_values(max(s), {}, {3});

  Tensor e = zeros({0, 3});
  expect_values(sum(e, {0}), {3}, {0, 0, 0});
  expect_values(matmul(zeros({2, 0}), zeros({0, 3})), {2, 3}, {0, 0, 0, 0, 0, 0});
  EXPECT_EQ(add(e, ones({3})).shape(), (Shape{0, 3}));
  EXPECT_EQ(cat({e, ones({2, 3})}, 0).shape(), (Shape{2, 3}));
  EXPECT_THAT(e.to_string(), ::testing::HasSubstr("shape=[0, 3]"));
  EXPECT_THROW(mean(e, {0}), Error);
  EXPECT_THROW(max(e, {0}), Error);

  expect_values(softmax(f32({5}, {1}), 0), {1}, {1});
  // Unbatched cross_entropy: logits [C], target a 0-d class index.
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(0.5));
  expect_values(cross_entropy(f64({1, 2, 0.5}, {3}), i64({1}, {})), {}, {lse - 2}, 1e-12);
}

}  // namespace
}  // namespace globe
