// Bad input to an op is a globe::Error whose message starts with "[op]" and names the shapes
// (docs/design.md §9).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "globe/globe.h"

namespace globe {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The message of the globe::Error that `f` throws ("" plus a test failure when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-globe exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error was thrown";
  return "";
}

const Tensor f23 = zeros({2, 3});

TEST(OpErrors, AddShapeMismatch) {
  const std::string msg = error_of([] { add(f23, zeros({4})); });
  EXPECT_THAT(msg, AllOf(StartsWith("[add]"), HasSubstr("[2, 3]"), HasSubstr("[4]")));
  EXPECT_THAT(error_of([] {
                sub(zeros({3, 1}), zeros({2, 4}));
              }),
              AllOf(StartsWith("[sub]"), HasSubstr("[3, 1]"), HasSubstr("[2, 4]")));
  EXPECT_THAT(error_of([] { mul(f23, zeros({3, 2})); }), StartsWith("[mul]"));
  EXPECT_THAT(error_of([] { div(f23, zeros({2, 2})); }), StartsWith("[div]"));
  EXPECT_THAT(error_of([] { f23 + zeros({5}); }), StartsWith("[add]"));
}

TEST(OpErrors, BinaryDtypeMismatch) {
  EXPECT_THAT(error_of([] {
                add(f23, zeros({2, 3}, kFloat64));
              }),
              AllOf(StartsWith("[add]"), HasSubstr("float32[2, 3]"), HasSubstr("float64[2, 3]")));
  EXPECT_THAT(error_of([] { div(arange(3), arange(3)); }),
              AllOf(StartsWith("[div]"), HasSubstr("int64")));
}

TEST(OpErrors, MatmulInnerDimMismatch) {
  const std::string msg = error_of([] { matmul(f23, zeros({4, 5})); });
  EXPECT_THAT(msg, AllOf(StartsWith("[matmul]"), HasSubstr("[2, 3]"), HasSubstr("[4, 5]")));
  EXPECT_THAT(error_of([] {
                matmul(zeros({2, 2, 3}), zeros({2, 2, 3}));
              }),
              AllOf(StartsWith("[matmul]"), HasSubstr("[2, 2, 3]")));
  EXPECT_THAT(error_of([] {
                matmul(zeros({2, 2, 3}), zeros({3, 3, 4}));
              }),
              AllOf(StartsWith("[matmul]"), HasSubstr("[2]"), HasSubstr("[3]")));  // batch dims
}

TEST(OpErrors, MatmulDtypeMismatch) {
  const std::string msg = error_of([] { matmul(f23, zeros({3, 2}, kFloat64)); });
  EXPECT_THAT(
      msg, AllOf(StartsWith("[matmul]"), HasSubstr("float32[2, 3]"), HasSubstr("float64[3, 2]")));
  EXPECT_THAT(error_of([] {
                matmul(zeros({2, 2}, kInt64), zeros({2, 2}, kInt64));
              }),
              AllOf(StartsWith("[matmul]"), HasSubstr("int64")));
}

TEST(OpErrors, MatmulBiasMismatch) {
  EXPECT_THAT(error_of([] { matmul_nt(f23, zeros({4, 3}), zeros({4}, kFloat64)); }),
              AllOf(StartsWith("[matmul_nt_bias] bias dtype float64"), HasSubstr("float32")));
  EXPECT_THAT(error_of([] { matmul_nt(f23, zeros({4, 3}), zeros({3})); }),
              AllOf(StartsWith("[matmul_nt_bias]"), HasSubstr("[3]"), HasSubstr("[2, 4]")));
  EXPECT_THAT(error_of([] { matmul_nt(f23, zeros({4, 3}), zeros({2, 2, 4})); }),
              AllOf(StartsWith("[matmul_nt_bias] bias [2, 2, 4]"), HasSubstr("[2, 4]")));
  EXPECT_THAT(error_of([] { linear(f23, zeros({4, 3}), zeros({3})); }),
              AllOf(StartsWith("[linear] bias"), HasSubstr("[3]"), HasSubstr("out_features=4")));
}

TEST(OpErrors, OutOfRangeDims) {
  EXPECT_THAT(error_of([] { sum(f23, {2}); }),
              AllOf(StartsWith("[sum]"), HasSubstr("dim 2"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { sum(f23, {-3}); }), AllOf(StartsWith("[sum]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] {
                sum(f23, {1, -1});
              }),
              AllOf(StartsWith("[sum]"), HasSubstr("repeated")));
  EXPECT_THAT(error_of([] { mean(f23, {5}); }), AllOf(StartsWith("[mean]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { max(f23, {2}); }), AllOf(StartsWith("[max]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { argmax(f23, 2); }), AllOf(StartsWith("[argmax]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { transpose(f23, 0, 2); }),
              AllOf(StartsWith("[transpose]"), HasSubstr("dim 2"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { softmax(f23, 2); }),
              AllOf(StartsWith("[softmax]"), HasSubstr("dim 2"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { log_softmax(f23, -3); }),
              AllOf(StartsWith("[log_softmax]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { narrow(f23, 2, 0, 1); }),
              AllOf(StartsWith("[narrow]"), HasSubstr("dim 2"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] {
                cat({f23, f23}, 2);
              }),
              AllOf(StartsWith("[cat]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] {
                permute(f23, {0, 2});
              }),
              AllOf(StartsWith("[permute]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { squeeze(f23, 3); }),
              AllOf(StartsWith("[squeeze]"), HasSubstr("[2, 3]")));
}

TEST(OpErrors, NarrowRangeOutOfBounds) {
  EXPECT_THAT(error_of([] { narrow(f23, 1, 2, 2); }),
              AllOf(StartsWith("[narrow]"), HasSubstr("[2, 4)"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { narrow(f23, 0, -1, 1); }), StartsWith("[narrow]"));
}

TEST(OpErrors, ReshapeWrongElementCount) {
  EXPECT_THAT(error_of([] {
                reshape(f23, {4, 2});
              }),
              AllOf(StartsWith("[reshape]"), HasSubstr("[2, 3]"), HasSubstr("[4, 2]")));
  EXPECT_THAT(error_of([] {
                reshape(f23, {4, -1});
              }),
              AllOf(StartsWith("[reshape]"), HasSubstr("[2, 3]"), HasSubstr("[4, -1]")));
  EXPECT_THAT(error_of([] { reshape(f23, {-1, -1}); }), StartsWith("[reshape]"));
  EXPECT_THAT(error_of([] { view(transpose(f23, 0, 1), {6}); }),
              AllOf(StartsWith("[view]"), HasSubstr("[3, 2]")));
}

TEST(OpErrors, OtherShapeOps) {
  EXPECT_THAT(error_of([] { squeeze(f23, 0); }),
              AllOf(StartsWith("[squeeze]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] {
                expand(f23, {4, 3});
              }),
              AllOf(StartsWith("[expand]"), HasSubstr("[2, 3]"), HasSubstr("[4, 3]")));
  EXPECT_THAT(error_of([] {
                permute(f23, {1, 1});
              }),
              AllOf(StartsWith("[permute]"), HasSubstr("repeated")));
  EXPECT_THAT(error_of([] {
                copy_(f23, zeros({3, 2}));
              }),
              AllOf(StartsWith("[copy_]"), HasSubstr("[2, 3]"), HasSubstr("[3, 2]")));
}

TEST(OpErrors, CatMismatch) {
  EXPECT_THAT(error_of([] {
                cat({f23, zeros({2, 4})}, 0);
              }),
              AllOf(StartsWith("[cat]"), HasSubstr("[2, 3]"), HasSubstr("[2, 4]")));
  EXPECT_THAT(error_of([] {
                cat({f23, zeros({2, 3, 1})}, 0);
              }),
              AllOf(StartsWith("[cat]"), HasSubstr("[2, 3, 1]")));
  EXPECT_THAT(error_of([] {
                cat({f23, zeros({2, 3}, kFloat64)}, 0);
              }),
              AllOf(StartsWith("[cat]"), HasSubstr("float64[2, 3]")));
  EXPECT_THAT(error_of([] { cat({}, 0); }), StartsWith("[cat]"));
}

TEST(OpErrors, GatherIndexOutOfRange) {
  const Tensor idx = from_vector(std::vector<int64_t>{0, 3, 1, 2}, {2, 2});
  EXPECT_THAT(error_of([&] { gather(f23, 1, idx); }),
              AllOf(StartsWith("[gather]"), HasSubstr("index 3"), HasSubstr("[2, 3]")));
  const Tensor negative = from_vector(std::vector<int64_t>{0, -1}, {2, 1});
  EXPECT_THAT(error_of([&] { gather(f23, 1, negative); }),
              AllOf(StartsWith("[gather]"), HasSubstr("index -1")));
  EXPECT_THAT(error_of([] {
                gather(f23, 1, zeros({2, 2}));
              }),
              AllOf(StartsWith("[gather]"), HasSubstr("int64")));
  EXPECT_THAT(error_of([] { gather(f23, 1, arange(2)); }),  // rank mismatch
              AllOf(StartsWith("[gather]"), HasSubstr("[2]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([&] {
                scatter_add({2, 3}, 1, idx, zeros({2, 2}));
              }),
              AllOf(StartsWith("[scatter_add]"), HasSubstr("index 3"), HasSubstr("[2, 3]")));
  EXPECT_THAT(
      error_of([] {
        scatter_add({2, 3}, 1, from_vector(std::vector<int64_t>{0, 1}, {2, 1}), zeros({2, 2}));
      }),
      AllOf(StartsWith("[scatter_add]"), HasSubstr("[2, 2]"), HasSubstr("[2, 1]")));
}

TEST(OpErrors, EmbeddingIndexOutOfRange) {
  const Tensor weight = zeros({4, 2});
  EXPECT_THAT(error_of([&] {
                embedding(weight, from_vector(std::vector<int64_t>{1, 4}, {2}));
              }),
              AllOf(StartsWith("[embedding]"), HasSubstr("index 4"), HasSubstr("[4, 2]")));
  EXPECT_THAT(error_of([&] { embedding(weight, from_vector(std::vector<int64_t>{-1}, {1})); }),
              AllOf(StartsWith("[embedding]"), HasSubstr("index -1")));
  EXPECT_THAT(error_of([&] { embedding(weight, zeros({3})); }),
              AllOf(StartsWith("[embedding]"), HasSubstr("int64"), HasSubstr("float32[3]")));
  EXPECT_THAT(error_of([] { embedding(zeros({4}), arange(2)); }),
              AllOf(StartsWith("[embedding]"), HasSubstr("[4]")));
}

TEST(OpErrors, CrossEntropyBadTargets) {
  const Tensor logits = zeros({4, 3});
  EXPECT_THAT(error_of([&] { cross_entropy(logits, zeros({4})); }),
              AllOf(StartsWith("[cross_entropy]"), HasSubstr("int64"), HasSubstr("float32[4]")));
  EXPECT_THAT(error_of([&] { cross_entropy(logits, arange(3)); }),
              AllOf(StartsWith("[cross_entropy]"), HasSubstr("[4, 3]"), HasSubstr("int64[3]")));
  // As many indices as rows, in another shape than [4] or OneFlow's [4, 1]: refused (OneFlow's
  // flattening would take it); [4, 1] itself is the rows' indices (test_oneflow_compat.py).
  EXPECT_THAT(error_of([&] {
                cross_entropy(logits, zeros({2, 2}, kInt64));
              }),
              AllOf(StartsWith("[cross_entropy]"), HasSubstr("[2, 2]")));
  EXPECT_EQ(cross_entropy(logits, zeros({4, 1}, kInt64)).item<double>(), cross_entropy(logits, zeros({4}, kInt64)).item<double>());
}

TEST(OpErrors, MseLossShapeMismatch) {
  EXPECT_THAT(error_of([] {
                mse_loss(f23, zeros({3, 2}));
              }),
              AllOf(StartsWith("[mse_loss]"), HasSubstr("[2, 3]"), HasSubstr("[3, 2]")));
}

TEST(OpErrors, NonFloatingInputs) {
  EXPECT_THAT(error_of([] { exp(arange(3)); }),
              AllOf(StartsWith("[exp]"), HasSubstr("floating"), HasSubstr("int64[3]")));
  EXPECT_THAT(error_of([] { log(arange(3)); }), StartsWith("[log]"));
  EXPECT_THAT(error_of([] { relu(arange(3)); }), StartsWith("[relu]"));
  EXPECT_THAT(error_of([] { pow(arange(3), 2.0); }),
              AllOf(StartsWith("[pow]"), HasSubstr("int64")));
  EXPECT_THAT(error_of([] { softmax(arange(3), 0); }),
              AllOf(StartsWith("[softmax]"), HasSubstr("int64")));
}

TEST(OpErrors, NnFunctionArguments) {
  EXPECT_THAT(error_of([] { layer_norm(f23, {2}, Tensor(), Tensor()); }),
              AllOf(StartsWith("[layer_norm]"), HasSubstr("[2]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { layer_norm(f23, {3}, zeros({2}), Tensor()); }),
              AllOf(StartsWith("[layer_norm] weight"), HasSubstr("[2]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { layer_norm(f23, {3}, Tensor(), zeros({3}, kFloat64)); }),
              AllOf(StartsWith("[layer_norm] bias"), HasSubstr("float64")));
  EXPECT_THAT(error_of([] { causal_softmax(arange(3), 1.0); }),
              AllOf(StartsWith("[causal_softmax]"), HasSubstr("int64"), HasSubstr("[3]")));
  EXPECT_THAT(error_of([] { causal_attention(f23, 1.0); }),
              AllOf(StartsWith("[causal_attention]"), HasSubstr("[3, ..., T, D]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { causal_attention(zeros({2, 4, 3}), 1.0); }),
              AllOf(StartsWith("[causal_attention]"), HasSubstr("[2, 4, 3]")));
  EXPECT_THAT(error_of([] { causal_attention(reshape(arange(12), {3, 2, 2}), 1.0); }),
              AllOf(StartsWith("[causal_attention]"), HasSubstr("int64")));
  EXPECT_THAT(error_of([] { rms_norm(f23, zeros({2}), 1e-6); }),
              AllOf(StartsWith("[rms_norm] weight"), HasSubstr("[2]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { rms_norm(arange(3), Tensor(), 1e-6); }), AllOf(StartsWith("[rms_norm]"), HasSubstr("int64")));
  EXPECT_THAT(error_of([] { rotary_embedding(f23, zeros({2, 1}), zeros({2, 1})); }),  // D = 3 is odd
              AllOf(StartsWith("[rotary_embedding]"), HasSubstr("D even"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { rotary_embedding(zeros({2, 5, 4}), zeros({5, 2}), zeros({4, 2})); }),
              AllOf(StartsWith("[rotary_embedding] sin float32[4, 2]"), HasSubstr("[5, 2]"), HasSubstr("[2, 5, 4]")));
  EXPECT_THAT(error_of([] { swiglu(f23, zeros({4})); }), AllOf(StartsWith("[swiglu]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] { dropout(f23, 1.5); }), StartsWith("[dropout]"));
  nn::Linear fc(4, 2);
  EXPECT_THAT(error_of([&] { fc(f23); }), AllOf(StartsWith("[Linear]"), HasSubstr("[2, 3]")));
}

TEST(OpErrors, UndefinedAndMisusedTensors) {
  EXPECT_THAT(error_of([] { add(Tensor(), f23); }),
              AllOf(StartsWith("[add]"), HasSubstr("undefined")));
  EXPECT_THAT(error_of([] { f23.item<float>(); }),
              AllOf(StartsWith("[item]"), HasSubstr("[2, 3]")));
  EXPECT_THAT(error_of([] {
                from_vector(std::vector<float>{1, 2}, {3});
              }),
              AllOf(StartsWith("[from_vector]"), HasSubstr("[3]")));
  EXPECT_THAT(error_of([] { f23.data<double>(); }), StartsWith("[data]"));
}

TEST(OpErrors, MessagesNameTheRank) {
  EXPECT_THAT(error_of([] { add(f23, zeros({4})); }), HasSubstr("(rank 0)"));
}

}  // namespace
}  // namespace globe
