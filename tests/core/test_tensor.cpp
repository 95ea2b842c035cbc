// Tests for globe/core: creation, views and strides, reading values, printing, and the seeded,
// counter-based random fills.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <type_traits>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <sstream>
#include <type_traits>
#include <vector>

#include "globe/globe.h"
#include "globe/kernels/cpu/random_fill.h"

namespace globe {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;

// ---- the 16-bit floats ---------------------------------------------------------------------------

// Float32 values that probe both formats: ties at every mantissa width, overflow, subnormals, NaN.
std::vector<float> probe_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.0f, 65520.0f, 1e6f, 6.0e-8f, 2.9e-8f, 3.0e-8f,
                          1e-30f, 3.4e38f, INFINITY, -INFINITY, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 1.0f + 0x1p-11f,
                          1.0f + 0x3p-11f};
  for (uint32_t bits = 0x33000000u; bits < 0x48000000u; bits += 0x00012345u) v.push_back(std::bit_cast<float>(bits));
  return v;
}

TEST(ReducedFloats, Float16RoundsAsTheCompilersIeeeHalf) {
#if defined(__FLT16_MAX__)
  for (float f : probe_values())
    for (float x : {f, -f}) {
      const uint16_t want = std::bit_cast<uint16_t>(static_cast<_Float16>(x));
      EXPECT_EQ(float16(x).bits, want) << x;
      const float back = float(float16(x)), ieee = float(static_cast<_Float16>(x));
      EXPECT_EQ(std::bit_cast<uint32_t>(back), std::bit_cast<uint32_t>(ieee)) << x;
    }
#else
  GTEST_SKIP() << "no _Float16 in this compiler to compare with";
#endif
  EXPECT_TRUE(std::isnan(float(float16(NAN))));
}

TEST(ReducedFloats, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float(bfloat16(1.0f + 0x1p-8f)), 1.0f);                 // a tie: to the even 1
  EXPECT_EQ(float(bfloat16(1.0f + 0x3p-8f)), 1.0f + 0x1p-6f);       // a tie: to the even neighbour above
  EXPECT_EQ(float(bfloat16(1.0f + 0x1p-8f + 0x1p-20f)), 1.0f + 0x1p-7f);  // above the tie
  EXPECT_EQ(bfloat16(std::bit_cast<float>(0x7f7f0000u)).bits, 0x7f7fu);  // the largest finite stays
  EXPECT_TRUE(std::isinf(float(bfloat16(3.4e38f))));                // rounds past the largest
  EXPECT_TRUE(std::isnan(float(bfloat16(NAN))));
  for (float f : probe_values()) EXPECT_EQ(float(bfloat16(float(bfloat16(f)))), float(bfloat16(f))) << f;
}

TEST(ReducedFloats, TensorsConvertThroughEveryPath) {
  // Dense, strided and transposed copies convert alike, both ways, between every pair.
  const Tensor x = randn({16, 24});
  for (DType low : {kBFloat16, kFloat16}) {
    const Tensor dense = to_dtype(x, low), strided = to_dtype(transpose(x, 0, 1), low);
    const std::vector<float> want = [&] {
      std::vector<float> v;
      for (float f : x.to_vector<float>()) v.push_back(low == kBFloat16 ? float(bfloat16(f)) : float(float16(f)));
      return v;
    }();
    EXPECT_EQ(to_dtype(dense, kFloat32).to_vector<float>(), want) << dtype_name(low);
    EXPECT_EQ(to_dtype(transpose(strided, 0, 1), kFloat32).to_vector<float>(), want) << dtype_name(low);
    EXPECT_EQ(to_dtype(contiguous(transpose(strided, 0, 1)), kFloat64).to_vector<float>(), want) << dtype_name(low);
  }
  EXPECT_EQ(to_dtype(to_dtype(full({3}, 1.5), kFloat16), kBFloat16).to_vector<float>(), std::vector<float>(3, 1.5f));
}

// ---- creation -----------------------------------------------------------------------------------

TEST(TensorCreation, ZerosOnesFull) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(z.numel(), 6);
  EXPECT_THAT(z.to_vector<float>(), ElementsAre(0, 0, 0, 0, 0, 0));

  Tensor o = ones({4}, kFloat64);
  EXPECT_EQ(o.dtype(), kFloat64);
  EXPECT_THAT(o.to_vector<double>(), ElementsAre(1, 1, 1, 1));

  Tensor f = full({2, 2}, 2.5);
  EXPECT_THAT(f.to_vector<float>(), ElementsAre(2.5f, 2.5f, 2.5f, 2.5f));

  Tensor i = full({3}, 7.0, kInt64);
  EXPECT_THAT(i.to_vector<int64_t>(), ElementsAre(7, 7, 7));

  Tensor s = full({}, 3.0);  // 0-d scalar
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_FLOAT_EQ(s.item<float>(), 3.0f);
  // item() without a type is a double, whatever the dtype (a float32 loss, an int64 count).
  static_assert(std::is_same_v<decltype(s.item()), double>);
  EXPECT_EQ(full({}, 0.1).item(), double(0.1f));
  EXPECT_EQ(full({1}, 5.0, kInt64).item(), 5.0);
  EXPECT_EQ(full({1}, 5.0, kInt64).item<int64_t>(), 5);
}

// One limit on dims for every device and exchange (core/shape.h): past it, creation and views
// refuse, naming the shape; at it, a tensor works and reshapes back.
TEST(TensorCreation, AtMostKMaxDimsEverywhere) {
  const Shape eight(kMaxDims, 1), nine(kMaxDims + 1, 1);
  const Tensor t = ones(eight);
  EXPECT_EQ(t.dim(), kMaxDims);
  EXPECT_EQ(reshape(t, {1}).numel(), 1);
  const auto message = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message([&] { Tensor::empty(nine); }),
              HasSubstr("[empty] a tensor of 9 dims ([1, 1, 1, 1, 1, 1, 1, 1, 1]): tensors have at most 8"));
  EXPECT_THAT(message([&] { reshape(t, nine); }), HasSubstr("a tensor of 9 dims"));
  EXPECT_THAT(message([&] { unsqueeze(t, 0); }), HasSubstr("a tensor of 9 dims"));
}

TEST(TensorCreation, Arange) {
  Tensor a = arange(5);
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_THAT(a.to_vector<int64_t>(), ElementsAre(0, 1, 2, 3, 4));

  Tensor b = arange(1.0, 2.0, 0.25);
  EXPECT_EQ(b.dtype(), kFloat32);
  EXPECT_THAT(b.to_vector<float>(), ElementsAre(1.0f, 1.25f, 1.5f, 1.75f));

  Tensor c = arange(3.0, 0.0, -1.0, kFloat64);
  EXPECT_THAT(c.to_vector<double>(), ElementsAre(3.0, 2.0, 1.0));

  EXPECT_EQ(arange(0).numel(), 0);
  EXPECT_THROW(arange(0.0, 1.0, 0.0), Error);
}

TEST(TensorCreation, FromVector) {
  Tensor f = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_TRUE(f.is_contiguous());
  EXPECT_EQ(f.strides(), (Shape{3, 1}));
  EXPECT_THAT(f.to_vector<float>(), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_FLOAT_EQ(f.data<float>()[4], 5.0f);

  Tensor d = from_vector(std::vector<double>{0.5, -0.5}, {2});
  EXPECT_EQ(d.dtype(), kFloat64);
  Tensor i = from_vector(std::vector<int64_t>{9, 8, 7}, {3, 1});
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_THAT(i.to_vector<int64_t>(), ElementsAre(9, 8, 7));
  // to_vector converts types.
  EXPECT_THAT(i.to_vector<double>(), ElementsAre(9.0, 8.0, 7.0));

  EXPECT_THROW(from_vector(std::vector<float>{1, 2, 3}, {2, 2}), Error);
  EXPECT_THROW(f.data<double>(), Error);  // wrong dtype
}

TEST(TensorCreation, RandAndRandnShapesAndRanges) {
  manual_seed(1);
  Tensor u = rand({50, 40});
  EXPECT_EQ(u.shape(), (Shape{50, 40}));
  for (float v : u.to_vector<float>()) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
  }
  Tensor w = uniform({1000}, -2.0, 3.0, kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);
  for (double v : w.to_vector<double>()) {
    EXPECT_GE(v, -2.0);
    EXPECT_LT(v, 3.0);
  }
  Tensor n = randn({3, 4}, kFloat64);
  EXPECT_EQ(n.dtype(), kFloat64);
  std::vector<double> nv = n.to_vector<double>();
  EXPECT_FALSE(std::all_of(nv.begin(), nv.end(), [&](double v) { return v == nv[0]; }));
}

TEST(TensorCreation, LikeCreation) {
  Tensor a = randn({2, 5}, kFloat64);
  Tensor z = zeros_like(a), o = ones_like(a);
  EXPECT_EQ(z.shape(), a.shape());
  EXPECT_EQ(z.dtype(), kFloat64);
  EXPECT_THAT(o.to_vector<double>(), ElementsAreArray(std::vector<double>(10, 1.0)));
}

// ---- views, strides, contiguity -----------------------------------------------------------------

TEST(TensorViews, TransposeSharesStorageAndSwapsStrides) {
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = transpose(a, 0, 1);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.storage(), a.storage());
  EXPECT_THAT(t.to_vector<float>(), ElementsAre(1, 4, 2, 5, 3, 6));

  // A write through the base is visible through the view.
  a.data<float>()[1] = 20.0f;
  EXPECT_THAT(t.to_vector<float>(), ElementsAre(1, 4, 20, 5, 3, 6));
}

TEST(TensorViews, ReshapeOfContiguousSharesStorage) {
  Tensor a = arange(0.0, 12.0);
  Tensor r = reshape(a, {3, 4});
  EXPECT_EQ(r.storage(), a.storage());
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_EQ(r.strides(), (Shape{4, 1}));
  Tensor v = view(a, {2, 6});
  EXPECT_EQ(v.storage(), a.storage());
  a.data<float>()[7] = -1.0f;
  EXPECT_FLOAT_EQ(r.to_vector<float>()[7], -1.0f);
  EXPECT_FLOAT_EQ(v.to_vector<float>()[7], -1.0f);
}

TEST(TensorViews, NarrowOffsetsAndContiguity) {
  Tensor a = reshape(arange(0.0, 12.0), {3, 4});
  Tensor rows = narrow(a, 0, 1, 2);  // rows 1..2: still contiguous, offset 4
  EXPECT_EQ(rows.storage(), a.storage());
  EXPECT_EQ(rows.offset(), 4);
  EXPECT_TRUE(rows.is_contiguous());
  EXPECT_THAT(rows.to_vector<float>(), ElementsAre(4, 5, 6, 7, 8, 9, 10, 11));

  Tensor cols = narrow(a, 1, 1, 2);  // columns 1..2: strided
  EXPECT_EQ(cols.offset(), 1);
  EXPECT_EQ(cols.strides(), (Shape{4, 1}));
  EXPECT_FALSE(cols.is_contiguous());
  EXPECT_THAT(cols.to_vector<float>(), ElementsAre(1, 2, 5, 6, 9, 10));

  // Size-1 dims don't break contiguity whatever their stride.
  Tensor one_row = narrow(a, 0, 2, 1);
  EXPECT_TRUE(one_row.is_contiguous());

  Tensor c = contiguous(cols);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage(), a.storage());
  EXPECT_THAT(c.to_vector<float>(), ElementsAre(1, 2, 5, 6, 9, 10));
  // contiguous() of a contiguous tensor is the tensor itself.
  EXPECT_TRUE(contiguous(a).same(a));
}

TEST(TensorViews, ExpandHasZeroStride) {
  Tensor a = from_vector(std::vector<float>{1, 2, 3}, {3, 1});
  Tensor e = expand(a, {3, 4});
  EXPECT_EQ(e.storage(), a.storage());
  EXPECT_EQ(e.strides()[1], 0);
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_THAT(e.to_vector<float>(), ElementsAre(1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
}

TEST(TensorViews, ItemAndToVectorOnNonContiguousViews) {
  Tensor a = reshape(arange(0.0, 24.0, 1.0, kFloat64), {2, 3, 4});
  Tensor p = permute(a, {2, 0, 1});  // [4, 2, 3]
  std::vector<double> expected;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) expected.push_back(i * 12 + j * 4 + k);
  EXPECT_THAT(p.to_vector<double>(), ElementsAreArray(expected));

  // A single element picked out of a strided view.
  Tensor e = narrow(narrow(narrow(p, 0, 3, 1), 1, 1, 1), 2, 2, 1);
  EXPECT_EQ(e.numel(), 1);
  EXPECT_DOUBLE_EQ(e.item<double>(), 1 * 12 + 2 * 4 + 3);
  EXPECT_THROW(p.item<double>(), Error);

  // A narrowed transpose: offset and strides both non-trivial.
  Tensor t = narrow(transpose(a, 1, 2), 1, 1, 2);  // [2, 2, 3]: t[i][k][j] = a[i][j][k+1]
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int k = 1; k < 3; ++k)
      for (int j = 0; j < 3; ++j) want.push_back(i * 12 + j * 4 + k);
  EXPECT_THAT(t.to_vector<double>(), ElementsAreArray(want));
}

TEST(TensorViews, DetachSharesDataButNotGraph) {
  Tensor a = randn({3}).set_requires_grad();
  Tensor b = mul(a, 2.0);
  Tensor d = b.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.storage(), b.storage());
  EXPECT_FALSE(d.same(b));
}

// ---- printing -----------------------------------------------------------------------------------

TEST(TensorPrinting, ContainsValuesShapeAndDtype) {
  Tensor a = from_vector(std::vector<float>{1.5f, -2.0f, 3.25f, 4.0f, 5.0f, 6.0f}, {2, 3});
  std::string s = a.to_string();
  EXPECT_THAT(s, HasSubstr("1.5"));
  EXPECT_THAT(s, HasSubstr("-2"));
  EXPECT_THAT(s, HasSubstr("3.25"));
  EXPECT_THAT(s, HasSubstr("shape=[2, 3]"));
  EXPECT_THAT(s, HasSubstr("dtype=float32"));
  EXPECT_THAT(s, Not(HasSubstr("requires_grad")));

  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(), s);

  a.set_requires_grad();
  EXPECT_THAT(a.to_string(), HasSubstr("requires_grad"));
}

TEST(TensorPrinting, IntegersPrintExactly) {
  Tensor i = from_vector(std::vector<int64_t>{1234567, -3}, {2});
  EXPECT_THAT(i.to_string(), HasSubstr("1234567"));
  EXPECT_THAT(i.to_string(), HasSubstr("dtype=int64"));
  Tensor scalar = from_vector(std::vector<int64_t>{1234567}, {});
  EXPECT_THAT(scalar.to_string(), HasSubstr("1234567"));
}

TEST(TensorPrinting, LongDimsAreElidedOnlyAboveAThousandElements) {
  // torch's and OneFlow's rule: above 1000 elements each long dim shows 3 values at each end.
  Tensor a = arange(1001);
  std::string s = a.to_string();
  EXPECT_THAT(s, HasSubstr("[0, 1, 2, ..., 998, 999, 1000]"));
  EXPECT_THAT(s, Not(HasSubstr("500")));
  EXPECT_THAT(s, HasSubstr("shape=[1001]"));
  // Up to 1000 elements every value is printed: an 8-wide row shows its 8 values.
  EXPECT_THAT(arange(8).to_string(), HasSubstr("[0, 1, 2, 3, 4, 5, 6, 7]"));
  std::string thousand = arange(1000).to_string();
  EXPECT_THAT(thousand, Not(HasSubstr("...")));
  EXPECT_THAT(thousand, HasSubstr(", 500, "));
  // A summarised 2-D tensor elides rows and columns alike: 3 rows at each end.
  std::string m = reshape(arange(2000), {40, 50}).to_string();
  EXPECT_THAT(m, HasSubstr("[0, 1, 2, ..., 47, 48, 49]"));
  EXPECT_THAT(m, HasSubstr("[1950, 1951, 1952, ..., 1997, 1998, 1999]"));
  EXPECT_THAT(m, Not(HasSubstr("[150, 151")));
}

TEST(TensorPrinting, NonContiguousPrintsLogicalOrder) {
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  EXPECT_THAT(transpose(a, 0, 1).to_string(), HasSubstr("[[1, 3],"));
}

// ---- random numbers -----------------------------------------------------------------------------

TEST(TensorRandom, ManualSeedIsDeterministic) {
  manual_seed(42);
  std::vector<float> a1 = randn({16}).to_vector<float>();
  std::vector<float> a2 = rand({16}).to_vector<float>();
  manual_seed(42);
  std::vector<float> b1 = randn({16}).to_vector<float>();
  std::vector<float> b2 = rand({16}).to_vector<float>();
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  // Successive calls draw different numbers; so do other seeds.
  EXPECT_NE(a1, randn({16}).to_vector<float>());
  manual_seed(43);
  EXPECT_NE(a1, randn({16}).to_vector<float>());
}

TEST(TensorRandom, RandnEqualsTheStreamItConsumes) {
  manual_seed(7);
  Tensor first = randn({4, 5});
  Tensor second = randn({4, 5});
  Tensor expect_first = Tensor::empty({4, 5});
  Tensor expect_second = Tensor::empty({4, 5});
  kernels::fill_normal(expect_first, RandomStream{7, 0}, {4, 5}, {0, 0});
  kernels::fill_normal(expect_second, RandomStream{7, 1}, {4, 5}, {0, 0});
  EXPECT_EQ(first.to_vector<float>(), expect_first.to_vector<float>());
  EXPECT_EQ(second.to_vector<float>(), expect_second.to_vector<float>());
}

// The fill is a pure function of (seed, call, logical position): any block of a logical tensor
// gets exactly the values the whole tensor has there.
TEST(TensorRandom, BlockFillMatchesTheWholeTensor) {
  const RandomStream stream{123, 5};
  const Shape logical{6, 8, 5};
  Tensor whole = Tensor::empty(logical, kFloat64);
  kernels::fill_normal(whole, stream, logical, {0, 0, 0});

  const Shape start{2, 3, 1}, extent{3, 4, 2};
  Tensor block = Tensor::empty(extent, kFloat64);
  kernels::fill_normal(block, stream, logical, start);
  Tensor region = narrow(narrow(narrow(whole, 0, 2, 3), 1, 3, 4), 2, 1, 2);
  EXPECT_EQ(block.to_vector<double>(), region.to_vector<double>());

  // Same for the uniform fill, along one dim only (a row shard).
  Tensor uwhole = Tensor::empty(logical);
  kernels::fill_uniform(uwhole, stream, logical, {0, 0, 0}, -1.0, 1.0);
  Tensor ublock = Tensor::empty({2, 8, 5});
  kernels::fill_uniform(ublock, stream, logical, {4, 0, 0}, -1.0, 1.0);
  EXPECT_EQ(ublock.to_vector<float>(), narrow(uwhole, 0, 4, 2).to_vector<float>());

  // A different call number gives different values.
  Tensor other = Tensor::empty(extent, kFloat64);
  kernels::fill_normal(other, RandomStream{123, 6}, logical, start);
  EXPECT_NE(other.to_vector<double>(), block.to_vector<double>());
}

TEST(TensorRandom, ValuesDependOnLogicalPositionOnly) {
  const RandomStream s{99, 3};
  EXPECT_EQ(normal_at(s, 17), normal_at(s, 17));
  EXPECT_NE(normal_at(s, 17), normal_at(s, 18));
  EXPECT_NE(uniform_at(s, 17), uniform_at(RandomStream{99, 4}, 17));
  EXPECT_NE(uniform_at(s, 17), uniform_at(RandomStream{100, 3}, 17));
}

// Pins the generator's raw outputs (core/philox.h, which the CUDA fills share): the first three are
// Random123's known-answer vectors for Philox4x32-10, the rest this library's element transforms.
// A change to the shared header that moves any bit fails here, on any machine.
TEST(TensorRandom, PhiloxOutputsArePinned) {
  using Words = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}), (Words{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (Words{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (Words{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));

  struct Pin {
    RandomStream s;
    uint64_t index;
    uint32_t uniform_bits, normal_bits;  // the floats' bit patterns
    uint64_t bits;
  };
  const Pin pins[] = {
      {{0x5eed, 3}, 0, 0x3e4c3a9cu, 0xbfdfbeeau, 0x769769ae330ea7c1ull},
      {{0x5eed, 3}, 17, 0x3f1f837fu, 0x3eb6a7a6u, 0xcf4cf8839f837f06ull},
      {{0x5eed, 3}, (uint64_t(1) << 32) + 5, 0x3f2c73a9u, 0x3eb8c304u, 0xd1085648ac73a964ull},
      {{123456789012345ull, uint64_t(1) << 33}, 1, 0x3e47db08u, 0xbfa543c1u, 0x6069cacd31f6c217ull},
      {{123456789012345ull, uint64_t(1) << 33}, 17, 0x3f486075u, 0x3e538021u, 0xcc3442aec860752bull},
  };
  for (const Pin& p : pins) {
    EXPECT_EQ(std::bit_cast<uint32_t>(uniform_at(p.s, p.index)), p.uniform_bits) << "uniform at " << p.index;
    EXPECT_EQ(std::bit_cast<uint32_t>(normal_at(p.s, p.index)), p.normal_bits) << "normal at " << p.index;
    EXPECT_EQ(bits_at(p.s, p.index), p.bits) << "bits at " << p.index;
  }
}

TEST(TensorRandom, RandnMeanAndStd) {
  manual_seed(2024);
  const int64_t n = 100000;
  std::vector<double> v = randn({n}, kFloat64).to_vector<double>();
  double mean = 0, sq = 0;
  for (double x : v) mean += x;
  mean /= n;
  for (double x : v) sq += (x - mean) * (x - mean);
  const double stddev = std::sqrt(sq / (n - 1));
  EXPECT_NEAR(mean, 0.0, 0.02);  // 6 standard errors
  EXPECT_NEAR(stddev, 1.0, 0.02);
  // Tails exist but stay reasonable.
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  EXPECT_LT(*lo, -3.0);
  EXPECT_GT(*hi, 3.0);
  EXPECT_GT(*lo, -7.0);
  EXPECT_LT(*hi, 7.0);
}

TEST(TensorRandom, RandMeanIsOneHalf) {
  manual_seed(5);
  std::vector<double> v = rand({100000}, kFloat64).to_vector<double>();
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  EXPECT_NEAR(mean, 0.5, 0.01);
}

// ---- misc ---------------------------------------------------------------------------------------

TEST(TensorMisc, SizeAndDescribe) {
  Tensor a = zeros({2, 3, 4}, kFloat64);
  EXPECT_EQ(a.size(0), 2);
  EXPECT_EQ(a.size(-1), 4);
  EXPECT_THROW(a.size(3), Error);
  EXPECT_EQ(describe(a), "float64[2, 3, 4]");
  EXPECT_EQ(describe(Tensor()), "undefined");
  EXPECT_FALSE(Tensor().defined());
  EXPECT_THROW(Tensor().shape(), Error);
}

TEST(TensorMisc, RequiresGradOnlyOnFloatingLeaves) {
  EXPECT_THROW(arange(3).set_requires_grad(), Error);
  Tensor a = zeros({2}).set_requires_grad();
  EXPECT_TRUE(a.requires_grad());
  Tensor b = add(a, 1.0);
  EXPECT_FALSE(b.is_leaf());
  EXPECT_THROW(b.set_requires_grad(false), Error);
}

}  // namespace
}  // namespace globe

namespace globe {
namespace {

TEST(MemoryStats, CountsStorageAndKeepsAResettablePeak) {
  const MemoryStats before = memory_stats();
  reset_peak_memory();
  {
    Tensor big = Tensor::empty({1 << 18});  // 1 MiB of float32
    EXPECT_EQ(memory_stats().current_bytes, before.current_bytes + (1 << 20));
  }
  const MemoryStats after = memory_stats();
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_EQ(after.peak_bytes, before.current_bytes + (1 << 20));
  reset_peak_memory();
  EXPECT_EQ(memory_stats().peak_bytes, before.current_bytes);
}

}  // namespace
}  // namespace globe
