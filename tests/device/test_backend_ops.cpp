// Every entry of a device's kernel table against the CPU table (ggml's test-backend-ops idea), on
// the device under test (device_under_test.h: a GPU where one is visible, else the sim device):
// the same op on the same inputs, on contiguous, transposed and broadcast operands, float32 and
// float64 (int64 where the op takes it). Exact where both devices round once per element (neg,
// relu, the four arithmetic ops, sqrt, copies, fills); within a few ulp where the GPU's math
// library differs from glibc (exp, log, tanh, erf, pow); matmul within a summation-order bound.
// The random fills draw the same raw bits on both devices: uniform, randint and dropout masks
// exact, normals within one float ulp. (The sim device runs the CPU's kernels: equal everywhere.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "device/device_under_test.h"
#include "globe/globe.h"
#include "globe/kernels/device_kernels.h"
#include "test_util.h"

namespace globe {
namespace {

const Device kDevice = testing::device_under_test();

// |gpu - cpu| <= tol * max(1, |cpu|) for every element (tol 0: equal bits, as doubles).
void expect_close(const Tensor& cpu, const Tensor& gpu, double tol, const std::string& what) {
  ASSERT_EQ(gpu.device(), kDevice) << what;
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
  const auto c = testing::values(cpu), g = testing::values(gpu);
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::isnan(c[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " element " << i;
    } else if (tol == 0) {
      ASSERT_EQ(g[i], c[i]) << what << " element " << i;
    } else {
      ASSERT_LE(std::abs(g[i] - c[i]), tol * std::max(1.0, std::abs(c[i]))) << what << " element " << i;
    }
  }
}

// Every element a float value on both devices, the GPU's equal to the CPU's or one float ulp away,
// and such neighbours rare (at most one element in a thousand, or one): the normals' contract, whose log and
// cos in double may differ between CUDA's math library and glibc's by an ulp of double, which moves
// the rounded float only where the double lies next to a rounding boundary.
void expect_within_float_ulp(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_EQ(gpu.device(), kDevice) << what;
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
  const auto c = testing::values(cpu), g = testing::values(gpu);
  size_t neighbours = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const float cf = float(c[i]), gf = float(g[i]);
    ASSERT_EQ(double(cf), c[i]) << what << " element " << i << " is not a float value on the CPU";
    ASSERT_EQ(double(gf), g[i]) << what << " element " << i << " is not a float value on the GPU";
    if (gf == cf) continue;
    ++neighbours;
    const float inf = std::numeric_limits<float>::infinity();
    ASSERT_TRUE(gf == std::nextafter(cf, inf) || gf == std::nextafter(cf, -inf))
        << what << " element " << i << ": cpu " << cf << ", gpu " << gf;
  }
  EXPECT_LE(neighbours, std::max<size_t>(1, c.size() / 1000))
      << what << ": " << neighbours << " of " << c.size() << " one ulp apart";
}

// Runs `f` on CPU inputs and on the same inputs moved to the GPU, with gradients for every floating
// input, and compares the outputs and the gradients.
void expect_same_with_grads(const std::vector<Tensor>& inputs, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                            double tol, const std::string& what) {
  std::vector<Tensor> cpu, gpu;
  for (const Tensor& t : inputs) {
    const bool grad = is_floating(t.dtype());
    cpu.push_back(grad ? t.detach().set_requires_grad() : t);
    gpu.push_back(grad ? to(t.detach(), kDevice).set_requires_grad() : to(t, kDevice));
  }
  const Tensor yc = f(cpu), yg = f(gpu);
  expect_close(yc, yg, tol, what);
  sum(mul(yc, yc)).backward();
  sum(mul(yg, yg)).backward();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (cpu[i].requires_grad()) expect_close(cpu[i].grad(), gpu[i].grad(), tol, what + " gradient " + std::to_string(i));
}

// The operands a test runs on: each made on the CPU, then the same values moved to the GPU.
struct Case {
  std::string name;
  std::function<Tensor(DType)> make;
};
std::vector<Case> layouts(const Shape& shape) {
  return {
      {"contiguous", [shape](DType dt) { return to_dtype(randn(shape), dt); }},
      {"transposed", [shape](DType dt) { return transpose(to_dtype(randn({shape[1], shape[0]}), dt), 0, 1); }},
      {"narrowed", [shape](DType dt) { return narrow(to_dtype(randn({shape[0], shape[1] + 3}), dt), 1, 2, shape[1]); }},
  };
}

double tolerance(DType dt, bool exact) { return exact ? 0.0 : dt == kFloat32 ? 4e-6 : 1e-13; }

TEST(BackendOps, UnaryKinds) {
  GLOBE_REQUIRE_DEVICE();
  struct U {
    const char* name;
    Tensor (*fn)(const Tensor&);
    bool exact;
    bool positive;  // log and sqrt take |x| + 0.1
  };
  const U ops[] = {{"neg", neg, true, false},        {"exp", exp, false, false},  {"log", log, false, true},
                   {"sqrt", sqrt, true, true},       {"relu", relu, true, false}, {"gelu", gelu, false, false},
                   {"gelu_tanh", gelu_tanh, false, false}, {"tanh", tanh, false, false},
                   {"sigmoid", sigmoid, false, false}, {"silu", silu, false, false}};
  for (DType dt : {kFloat32, kFloat64})
    for (const Case& c : layouts({17, 33}))
      for (const U& op : ops) {
        Tensor x = c.make(dt);
        if (op.positive) x = add(abs(x), 0.1);
        const std::string what = std::string(op.name) + " " + c.name + " " + dtype_name(dt);
        expect_close(op.fn(x), op.fn(to(x, kDevice)), tolerance(dt, op.exact), what);
      }
}

TEST(BackendOps, BinaryKindsWithBroadcasting) {
  GLOBE_REQUIRE_DEVICE();
  struct B {
    const char* name;
    Tensor (*fn)(const Tensor&, const Tensor&);
  };
  const B ops[] = {{"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}};
  for (DType dt : {kFloat32, kFloat64})
    for (const Case& c : layouts({9, 12}))
      for (const B& op : ops) {
        const Tensor a = c.make(dt);
        for (const Shape& bs : {Shape{9, 12}, Shape{12}, Shape{9, 1}, Shape{1}}) {
          const Tensor b = add(to_dtype(rand(bs), dt), 0.5);
          const std::string what = std::string(op.name) + " " + c.name + " with " + shape_str(bs) + " " + dtype_name(dt);
          expect_close(op.fn(a, b), op.fn(to(a, kDevice), to(b, kDevice)), 0.0, what);
          expect_close(op.fn(b, a), op.fn(to(b, kDevice), to(a, kDevice)), 0.0, what + " (swapped)");
        }
      }
  const Tensor i = randint(-50, 50, {6, 5}), j = randint(-50, 50, {5});
  for (const B& op : {ops[0], ops[1], ops[2]})
    expect_close(op.fn(i, j), op.fn(to(i, kDevice), to(j, kDevice)), 0.0, std::string(op.name) + " int64");
}

// Sums over every kind of reduced set (globe/kernels/cuda/reduce.cu): the innermost dim (a warp
// per output), a bias gradient's sum over rows (a thread per output), separated and middle dims,
// the whole tensor; sizes that cut the reduced elements into chunks added by a second kernel;
// strided views; int64 exact.
TEST(BackendOps, SumsOverEveryKindOfReducedSet) {
  GLOBE_REQUIRE_DEVICE();
  struct R {
    Shape shape;
    std::vector<int64_t> dims;
  };
  const R cases[] = {
      {{2048, 768}, {0}},         // columns: 768 outputs of 2048 rows, in chunks
      {{2048, 768}, {1}},         // rows: a warp per output
      {{2048, 768}, {}},          // one output: chunks, then the second kernel
      {{2, 12, 64, 40}, {1, 3}},  // two separated dims, the inner 40 wide (a warp's step wraps)
      {{2, 12, 64, 40}, {0, 2}},  // outer and middle dims
      {{5, 31}, {1}},             // a row narrower than a warp
      {{3, 1, 7}, {1}},           // a dim of one: nothing to add
      {{1000003}, {0}},           // an odd length, whole
      {{0, 768}, {0}},            // nothing to add: zeros
  };
  for (DType dt : {kFloat32, kFloat64})
    for (const R& r : cases) {
      const Tensor x = to_dtype(randn(r.shape), dt);
      const double tol = dt == kFloat32 ? 1e-6 : 1e-12;
      const std::string what = "sum over " + shape_str(Shape(r.dims.begin(), r.dims.end())) + " of " +
                               shape_str(r.shape) + " " + dtype_name(dt);
      expect_close(sum(x, r.dims), sum(to(x, kDevice), r.dims), tol, what);
      expect_close(sum(x, r.dims, true), sum(to(x, kDevice), r.dims, true), tol, what + " keepdim");
      if (r.shape.size() != 2) continue;
      // The same reductions of a transposed and of a narrowed view.
      std::vector<int64_t> swapped;
      for (int64_t d : r.dims) swapped.push_back(1 - d);
      const Tensor t = transpose(x, 0, 1), n = narrow(x, 1, 3, r.shape[1] - 5);
      expect_close(sum(t, swapped), sum(transpose(to(x, kDevice), 0, 1), swapped), tol, what + " transposed");
      expect_close(sum(n, r.dims), sum(narrow(to(x, kDevice), 1, 3, r.shape[1] - 5), r.dims), tol, what + " narrowed");
    }
  const Tensor i = randint(-1000, 1000, {4096, 300});
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, std::vector<int64_t>{1}, std::vector<int64_t>{}})
    expect_close(sum(i, dims), sum(to(i, kDevice), dims), 0.0, "int64 sum");
}

// The backward kernels of the unary ops, through autograd on both devices.
TEST(BackendOps, UnaryGradients) {
  GLOBE_REQUIRE_DEVICE();
  for (Tensor (*fn)(const Tensor&) : {relu, gelu, gelu_tanh, tanh, sigmoid, exp})
    for (DType dt : {kFloat32, kFloat64}) {
      const Tensor x0 = to_dtype(randn({8, 16}), dt);
      Tensor xc = x0.detach().set_requires_grad(), xg = to(x0, kDevice).set_requires_grad();
      sum(mul(fn(xc), 0.5)).backward();
      sum(mul(fn(xg), 0.5)).backward();
      expect_close(xc.grad(), xg.grad(), tolerance(dt, false), std::string("gradient ") + dtype_name(dt));
    }
}

TEST(BackendOps, ScalarKinds) {
  GLOBE_REQUIRE_DEVICE();
  for (DType dt : {kFloat32, kFloat64})
    for (const Case& c : layouts({5, 11})) {
      const Tensor x = c.make(dt), xg = to(x, kDevice);
      expect_close(add(x, 0.25), add(xg, 0.25), 0.0, "add_scalar");
      expect_close(mul(x, -3.0), mul(xg, -3.0), 0.0, "mul_scalar");
      expect_close(pow(x, 2.0), pow(xg, 2.0), 0.0, "square");
      expect_close(pow(abs(x), 1.5), pow(abs(xg), 1.5), tolerance(dt, false), "pow");
    }
}

TEST(BackendOps, ClampAndMaskedFill) {
  GLOBE_REQUIRE_DEVICE();
  for (DType dt : {kFloat32, kFloat64})
    for (const Case& c : layouts({6, 9})) {
      const Tensor x = c.make(dt), mask = randint(0, 2, {6, 9});
      expect_same_with_grads({x}, [](const auto& in) { return clamp(in[0], -0.5, 0.7); }, 0.0, "clamp");
      expect_same_with_grads({x}, [](const auto& in) { return clamp(in[0], std::nullopt, 0.2); }, 0.0, "clamp max");
      expect_same_with_grads({x, mask}, [](const auto& in) { return masked_fill(in[0], in[1], -3.0); }, 0.0,
                             "masked_fill");
      // Comparisons (bool out, cast back to compare values) and where / masked_fill on their masks.
      const Tensor xg = to(x, kDevice);
      for (auto [cmp, name] : std::vector<std::pair<Tensor (*)(const Tensor&, double), const char*>>{
               {&lt, "lt"}, {&le, "le"}, {&gt, "gt"}, {&ge, "ge"}, {&eq, "eq"}, {&ne, "ne"}})
        expect_close(to_dtype(cmp(relu(x), 0.0), dt), to_dtype(cmp(relu(xg), 0.0), dt), 0.0, name);
      expect_close(to_dtype(lt(x, narrow(x, 0, 0, 1)), dt), to_dtype(lt(xg, narrow(xg, 0, 0, 1)), dt), 0.0, "lt bcast");
      expect_same_with_grads({x}, [](const auto& in) { return where(gt(in[0], 0.1), in[0], 0.5); }, 0.0, "where");
      expect_same_with_grads({x}, [](const auto& in) { return masked_fill(in[0], le(in[0], 0.0), 2.0); }, 0.0,
                             "masked_fill bool");
    }
}

TEST(BackendOps, CastsAndCopies) {
  GLOBE_REQUIRE_DEVICE();
  for (const Case& c : layouts({7, 6}))
    for (DType from : {kFloat32, kFloat64})
      for (DType into : {kFloat32, kFloat64, kInt64}) {
        const Tensor x = mul(c.make(from), 10.0);
        expect_close(to_dtype(x, into), to_dtype(to(x, kDevice), into), 0.0, std::string("cast ") + c.name);
        expect_close(contiguous(x), contiguous(to(x, kDevice)), 0.0, std::string("contiguous ") + c.name);
      }
}

// 16-bit floats on the device: casts both ways give the CPU's bits (rounding to nearest even,
// subnormals, overflow to infinity and NaN included), and an op without a 16-bit kernel runs
// through the dispatcher's float32 rule there as on the CPU: within one 16-bit rounding of the
// CPU's result (the device's float32 kernel may differ from the CPU's in the last float bits).
TEST(BackendOps, SixteenBitFloatsCastExactlyAndComputeThroughFloat32) {
  GLOBE_REQUIRE_DEVICE();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor specials = from_vector(std::vector<float>{0.0f, -0.0f, 1.0f, 1.00390625f, 1.0f / 3, 65504.0f, 65520.0f,
                                                         1e5f, 6e-8f, 3e-8f, 1e-40f, -2.5e-6f, inf, -inf, nan, 3.0e38f},
                                      {16});
  const Tensor x = cat({specials, mul(randn({48}), 100.0)}, 0);
  for (DType h : {kBFloat16, kFloat16}) {
    const Tensor cpu = to_dtype(x, h), dev = to_dtype(to(x, kDevice), h);
    expect_close(to_dtype(cpu, kFloat32), to_dtype(dev, kFloat32), 0.0, std::string("cast to ") + dtype_name(h));
    expect_close(to_dtype(cpu, kFloat64), to_dtype(to(cpu, kDevice), kFloat64), 0.0, std::string("cast from ") + dtype_name(h));
    expect_close(full({3}, 1.0 / 3, h), full({3}, 1.0 / 3, h, kDevice), 0.0, std::string("fill ") + dtype_name(h));
    const Tensor a = to_dtype(randn({8, 16}), h), b = to_dtype(randn({16, 4}), h);
    const double ulp = h == kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
    expect_close(to_dtype(matmul(a, b), kFloat32), to_dtype(matmul(to(a, kDevice), to(b, kDevice)), kFloat32), 2 * ulp,
                 std::string("matmul through float32, ") + dtype_name(h));
    expect_close(to_dtype(exp(a), kFloat32), to_dtype(exp(to(a, kDevice)), kFloat32), 2 * ulp,
                 std::string("exp through float32, ") + dtype_name(h));
  }
}

TEST(BackendOps, MatmulShapes) {
  GLOBE_REQUIRE_DEVICE();
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 2e-5 : 1e-12;
    auto r = [dt](const Shape& s) { return to_dtype(randn(s), dt); };
    struct M {
      const char* name;
      Tensor a, b;
    };
    const M cases[] = {
        {"2-D", r({13, 7}), r({7, 5})},
        {"batched", r({3, 4, 6}), r({3, 6, 2})},
        {"broadcast batch", r({2, 1, 4, 6}), r({3, 6, 5})},
        {"transposed a", transpose(r({7, 13}), 0, 1), r({7, 5})},
        {"transposed b", r({13, 7}), transpose(r({5, 7}), 0, 1)},
        {"vector", r({4, 8}), r({8})},
        {"empty inner", r({3, 0}), r({0, 4})},
        {"batched, transposed b", r({2, 3, 4}), transpose(r({2, 5, 4}), -1, -2)},
        {"a broadcast whole", r({3, 4}), r({2, 4, 5})},
    };
    for (const M& m : cases)
      expect_close(matmul(m.a, m.b), matmul(to(m.a, kDevice), to(m.b, kDevice)), tol, std::string("matmul ") + m.name);
    const Tensor x = r({6, 10}), w = r({4, 10}), bias = r({4});
    expect_close(linear(x, w, bias), linear(to(x, kDevice), to(w, kDevice), to(bias, kDevice)), tol, "linear with bias");
    // The bias as cuBLASLt's epilogue (a vector over the last dim: one GEMM over a batch's rows,
    // batched GEMMs) and written into the output first (any other shape).
    const Tensor x3 = r({2, 3, 10});
    expect_close(linear(x3, w, bias), linear(to(x3, kDevice), to(w, kDevice), to(bias, kDevice)), tol, "linear 3-D with bias");
    struct B {
      const char* name;
      Tensor a, b, bias;
    };
    const B biased[] = {
        {"batched, vector bias", r({2, 5, 4}), r({2, 3, 4}), r({1, 3})},
        {"batched, bias per entry", r({2, 5, 4}), r({2, 3, 4}), r({2, 1, 3})},
        {"bias per row", r({2, 5, 4}), r({3, 4}), r({5, 1})},
    };
    for (const B& c : biased)
      expect_close(matmul_nt(c.a, c.b, c.bias), matmul_nt(to(c.a, kDevice), to(c.b, kDevice), to(c.bias, kDevice)), tol,
                   std::string("matmul_nt ") + c.name);
    // The gradients of a product, which are products too.
    Tensor a = r({5, 3}).set_requires_grad(), b = r({3, 4}).set_requires_grad();
    Tensor ag = to(a.detach(), kDevice).set_requires_grad(), bg = to(b.detach(), kDevice).set_requires_grad();
    sum(matmul(a, b)).backward();
    sum(matmul(ag, bg)).backward();
    expect_close(a.grad(), ag.grad(), tol, "matmul gradient a");
    expect_close(b.grad(), bg.grad(), tol, "matmul gradient b");
  }
}

// set_float32_matmul_precision("high"), as torch's: a device with a faster float32 product mode
// uses it (CUDA: TF32, operands rounded to 10 mantissa bits, so a sum of 256 products lands within
// a few hundredths of float32's, and differs from it), every other device keeps full float32 (the
// bits of "highest"); the setting refuses what it does not know, by name.
TEST(BackendOps, Float32MatmulPrecisionHighUsesTf32OnlyWhereTheDeviceHasIt) {
  GLOBE_REQUIRE_DEVICE();
  const Tensor a = to(randn({64, 256}), kDevice), b = to(randn({256, 48}), kDevice);
  const Tensor full = matmul(a, b);
  set_float32_matmul_precision("high");
  EXPECT_EQ(float32_matmul_precision(), "high");
  const Tensor fast = matmul(a, b);
  set_float32_matmul_precision("highest");
  EXPECT_EQ(float32_matmul_precision(), "highest");
  if (std::string(device_type_name(kDevice.type)) == "cuda") {
    expect_close(full, fast, 5e-2, "a TF32 product against float32's");
    EXPECT_NE(testing::values(full), testing::values(fast)) << "\"high\" changed no bit: TF32 was not used";
  } else {
    expect_close(full, fast, 0.0, "a float32 product under \"high\" on a device without TF32");
  }
  EXPECT_EQ(testing::values(matmul(a, b)), testing::values(full)) << "\"highest\" again gives float32's bits";
  const std::string error = testing::error_of([] { set_float32_matmul_precision("fast"); });
  EXPECT_NE(error.find("[set_float32_matmul_precision] 'fast' is not a precision: highest"), std::string::npos) << error;
  EXPECT_EQ(float32_matmul_precision(), "highest");
}

// Deterministic mode's leaf sum (kernels/tree_sum.h): the device's bits are the CPU's, and an
// output's bits do not depend on how many other outputs the call computes (a rank's share of
// them), as the device's general sum's may (it cuts a reduction to fill the device).
TEST(BackendOps, LeafTreeSumIsTheCpusOrderWhateverTheShare) {
  GLOBE_REQUIRE_DEVICE();
  for (DType dt : {kFloat32, kFloat64}) {
    const Tensor x = mul(to_dtype(randn({3, 96, 5}), dt), 1e3);  // 3 leaves of 32 per output
    const Tensor cpu = kernels::kernels_for(x).leaf_tree_sum(x, 32);
    const Tensor dx = to(x, kDevice);
    expect_close(cpu, kernels::kernels_for(dx).leaf_tree_sum(dx, 32), 0.0, std::string("leaf_tree_sum ") + dtype_name(dt));
    const Tensor one = contiguous(narrow(narrow(dx, 0, 1, 1), 2, 2, 1));  // output (1, 2) alone
    EXPECT_EQ(testing::values(kernels::kernels_for(one).leaf_tree_sum(one, 32))[0], testing::values(cpu)[1 * 5 + 2])
        << dtype_name(dt);
  }
}

TEST(BackendOps, Fills) {
  GLOBE_REQUIRE_DEVICE();
  for (DType dt : {kFloat32, kFloat64, kInt64}) {
    expect_close(full({4, 3}, 7.0, dt), full({4, 3}, 7.0, dt, kDevice), 0.0, "full");
    expect_close(zeros({5}, dt), zeros({5}, dt, kDevice), 0.0, "zeros");
    expect_close(ones_like(full({2}, 3.0, dt)), ones_like(full({2}, 3.0, dt, kDevice)), 0.0, "ones_like");
  }
}

TEST(BackendOps, SoftmaxFamily) {
  GLOBE_REQUIRE_DEVICE();
  manual_seed(253);  // its own inputs, whichever tests ran before
  for (DType dt : {kFloat32, kFloat64}) {
    // The gradient of sum(y * y) sums 2y over a row (|y| up to ~20 for log_softmax of 3 randn):
    // float32 sums of that size differ between the CPU's and the GPU's order by ~1e-5.
    const double tol = dt == kFloat32 ? 2e-5 : tolerance(dt, false);
    const Tensor x = to_dtype(mul(randn({4, 5, 37}), 3.0), dt);
    for (int64_t dim : {-1, 1, 0}) {
      expect_same_with_grads({x}, [dim](const auto& in) { return softmax(in[0], dim); }, tol, "softmax");
      expect_same_with_grads({x}, [dim](const auto& in) { return log_softmax(in[0], dim); }, tol, "log_softmax");
    }
    const Tensor scores = to_dtype(randn({2, 3, 9, 9}), dt);
    expect_same_with_grads({scores}, [](const auto& in) { return causal_softmax(in[0], 0.5); }, tol, "causal_softmax");
    expect_same_with_grads({scores}, [](const auto& in) { return causal_fill(in[0], -5.0); }, 0.0, "causal_fill");
  }
}

TEST(BackendOps, LayerNormEmbeddingAndLosses) {
  GLOBE_REQUIRE_DEVICE();
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 2e-5 : 1e-12;
    const Tensor x = to_dtype(randn({6, 33}), dt), w = to_dtype(randn({33}), dt), b = to_dtype(randn({33}), dt);
    expect_same_with_grads({x, w, b}, [](const auto& in) { return layer_norm(in[0], {33}, in[1], in[2], 1e-5); }, tol,
                           "layer_norm");
    expect_same_with_grads({x}, [](const auto& in) { return layer_norm(in[0], {33}, Tensor(), Tensor(), 1e-5); }, tol,
                           "layer_norm without affine");
    expect_same_with_grads({x, w}, [](const auto& in) { return rms_norm(in[0], in[1], 1e-6); }, tol, "rms_norm");
    const Tensor up = to_dtype(randn({6, 33}), dt);
    expect_same_with_grads({x, up}, [](const auto& in) { return swiglu(in[0], in[1]); }, tol, "swiglu");
    expect_same_with_grads({x, w}, [](const auto& in) { return swiglu(in[0], in[1]); }, tol, "swiglu broadcast");
    const Tensor rows = to_dtype(randn({2, 5, 3, 8}), dt), cos = to_dtype(randn({5, 4}), dt),
                 sin = to_dtype(randn({5, 4}), dt);
    expect_same_with_grads({rows, cos, sin}, [](const auto& in) { return rotary_embedding(transpose(in[0], 1, 2), in[1], in[2]); },
                           tol, "rotary_embedding");
    const Tensor table = to_dtype(randn({11, 7}), dt), ids = randint(0, 11, {3, 5});
    expect_same_with_grads({table, ids}, [](const auto& in) { return embedding(in[0], in[1]); }, tol, "embedding");
    const Tensor logits = to_dtype(randn({8, 13}), dt), target = randint(0, 13, {8});
    expect_same_with_grads({logits, target}, [](const auto& in) { return cross_entropy(in[0], in[1]); }, tol,
                           "cross_entropy");
    expect_same_with_grads({logits, target}, [](const auto& in) { return pick(in[0], in[1]); }, 0.0, "pick");
    expect_same_with_grads({logits}, [](const auto& in) { return max(in[0], {-1}); }, 0.0, "max");
    expect_close(argmax(logits, -1), argmax(to(logits, kDevice), -1), 0.0, "argmax");
    expect_same_with_grads({x, w}, [](const auto& in) { return mse_loss(in[0], expand(in[1], {6, 33})); }, tol, "mse");
  }
}

TEST(BackendOps, CausalAttention) {
  GLOBE_REQUIRE_DEVICE();
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 2e-5 : 1e-12;
    // Packed [3, B, H, T, D], and GPT's layout: a [B, T, 3, H, D] projection viewed as heads.
    const Tensor qkv = to_dtype(randn({3, 2, 2, 19, 12}), dt);
    expect_same_with_grads({qkv}, [](const auto& in) { return causal_attention(in[0], 0.3); }, tol, "attention");
    const Tensor proj = to_dtype(randn({2, 7, 3, 2, 8}), dt);
    expect_same_with_grads({proj}, [](const auto& in) { return causal_attention(permute(in[0], {2, 0, 3, 1, 4}), 0.35); },
                           tol, "attention on a heads view");
  }
}

TEST(BackendOps, DropoutDrawsTheSameMask) {
  GLOBE_REQUIRE_DEVICE();
  const Tensor x = randn({64, 16});
  manual_seed(7);
  const Tensor c = dropout(x, 0.3);
  manual_seed(7);
  const Tensor g = dropout(to(x, kDevice), 0.3);
  expect_close(c, g, 0.0, "dropout");
}

// The random_fill entry on a block of a larger logical tensor (a shard's, its start not 0), the
// same stream on both devices: each element is drawn at its logical position, so the GPU draws the
// CPU's raw bits. uniform, randint and dropout masks equal bit for bit; normals within one float ulp
// (expect_within_float_ulp says why).
TEST(BackendOps, RandomFillsOnABlock) {
  GLOBE_REQUIRE_DEVICE();
  using kernels::RandomKind;
  struct Block {
    const char* name;
    Shape logical, start, shape;
  };
  const Block blocks[] = {
      {"3-D block", {7, 9, 5}, {2, 3, 1}, {4, 5, 3}},
      {"row shard", {64, 33}, {40, 0}, {24, 33}},
      // Logical indices across 2^32: the counter's high word.
      {"across 2^32", {int64_t(1) << 33}, {(int64_t(1) << 32) - 3000}, {6000}},
      {"whole", {16, 17}, {0, 0}, {16, 17}},
  };
  const RandomStream s{2024, 17};
  for (const Block& b : blocks) {
    auto draw = [&](const Device& d, RandomKind kind, DType dt, const kernels::RandomParams& params) {
      Tensor t = Tensor::uninitialized(b.shape, dt, d);
      kernels::kernels_on(d).random_fill(kind, t, s, b.logical, b.start, params);
      return t;
    };
    auto both = [&](RandomKind kind, DType dt, const kernels::RandomParams& params) {
      return std::pair{draw(kCPU, kind, dt, params), draw(kDevice, kind, dt, params)};
    };
    for (DType dt : {kFloat32, kFloat64}) {
      const std::string what = std::string(b.name) + " " + dtype_name(dt);
      const auto [nc, ng] = both(RandomKind::normal, dt, {});
      expect_within_float_ulp(nc, ng, "normal " + what);
      for (const auto& [low, high] : {std::pair{0.0, 1.0}, std::pair{-2.5, 3.25}, std::pair{-1e-3, 1e5}}) {
        const auto [uc, ug] = both(RandomKind::uniform, dt, {.low = low, .high = high});
        expect_close(uc, ug, 0.0, "uniform " + what);
      }
      for (double p : {0.1, 0.5, 0.9}) {
        const auto [mc, mg] = both(RandomKind::dropout_mask, dt, {.p = p});
        expect_close(mc, mg, 0.0, "dropout mask " + what);
      }
    }
    // int64 compared as int64 (doubles would round the wide range's values).
    for (const auto& [low, high] : {std::pair<int64_t, int64_t>{0, 2}, std::pair<int64_t, int64_t>{-7, 1000003},
                                    std::pair<int64_t, int64_t>{-(int64_t(1) << 61) + 12345, (int64_t(1) << 61) - 7}}) {
      const auto [ic, ig] = both(RandomKind::randint, kInt64, {.int_low = low, .int_high = high});
      ASSERT_EQ(ig.device(), kDevice);
      EXPECT_EQ(ig.to_vector<int64_t>(), ic.to_vector<int64_t>())
          << "randint " << b.name << " [" << low << ", " << high << ")";
    }
  }
}

// randn / rand / dropout on a GPU draw there, from the same stream as on the CPU.
TEST(BackendOps, RandomCreationOnTheGpu) {
  GLOBE_REQUIRE_DEVICE();
  for (DType dt : {kFloat32, kFloat64}) {
    manual_seed(31);
    const Tensor nc = randn({37, 29}, dt), uc = rand({37, 29}, dt);
    manual_seed(31);
    const Tensor ng = randn({37, 29}, dt, kDevice), ug = rand({37, 29}, dt, kDevice);
    expect_within_float_ulp(nc, ng, std::string("randn ") + dtype_name(dt));
    expect_close(uc, ug, 0.0, std::string("rand ") + dtype_name(dt));
    const Tensor x = to_dtype(add(rand({21, 13}), 0.5), dt);
    manual_seed(8);
    const Tensor dc = dropout(x, 0.25);
    manual_seed(8);
    const Tensor dg = dropout(to(x, kDevice), 0.25);
    expect_close(dc, dg, 0.0, std::string("dropout ") + dtype_name(dt));
  }
}

// One optimizer step on each device from the same parameters and gradients.
TEST(BackendOps, OptimizerStepsAndClipping) {
  GLOBE_REQUIRE_DEVICE();
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 1e-6 : 1e-14;
    auto run = [&](const Device& d, int which) {
      manual_seed(3);
      Tensor w = to(to_dtype(randn({5, 6}), dt), d).set_requires_grad();
      Tensor b = to(to_dtype(randn({6}), dt), d).set_requires_grad();
      std::unique_ptr<optim::Optimizer> opt;
      if (which == 0) opt = std::make_unique<optim::SGD>(std::vector<Tensor>{w, b}, optim::SGDOptions{.lr = 0.1});
      if (which == 1)
        opt = std::make_unique<optim::SGD>(std::vector<Tensor>{w, b},
                                           optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
      if (which == 2) opt = std::make_unique<optim::Adam>(std::vector<Tensor>{w, b}, optim::AdamOptions{.lr = 0.01});
      if (which == 3)
        opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{w, b}, optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1});
      for (int step = 0; step < 3; ++step) {
        const Tensor x = to(to_dtype(randn({4, 5}), dt), d);
        sum(mul(add(matmul(x, w), b), 2.0)).backward();
        optim::clip_grad_norm({w, b}, 1.0);
        opt->step();
        opt->zero_grad();
      }
      return std::vector<Tensor>{w.detach(), b.detach()};
    };
    for (int which = 0; which < 4; ++which) {
      const auto c = run(kCPU, which), g = run(kDevice, which);
      expect_close(c[0], g[0], tol, "optimizer " + std::to_string(which) + " weight");
      expect_close(c[1], g[1], tol, "optimizer " + std::to_string(which) + " bias");
    }
  }
}

}  // namespace
}  // namespace globe
