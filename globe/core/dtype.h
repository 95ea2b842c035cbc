// Element types. float32 is the working type, float64 serves gradient checks, int64 holds indices,
// bool holds the results of comparisons (one byte, 0 or 1: masks for where and masked_fill, counts
// after a cast), bfloat16 and float16 are storage types for mixed precision: kernels widen them to
// float32, compute and accumulate there, and round the result once (kernels/via_float32.h;
// docs/design.md §17). int32, int8 and uint8 are storage types too (OneFlow's and torch's names,
// data and checkpoints that hold them): they cast, copy, compare, select, move and save; an op that
// computes in them says so by name (cast to int64 or a float first).
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "globe/base/error.h"

namespace globe {

enum class DType : uint8_t { float32, float64, int64, bfloat16, float16, boolean, int32, int8, uint8 };

inline constexpr DType kFloat32 = DType::float32;
inline constexpr DType kFloat64 = DType::float64;
inline constexpr DType kInt64 = DType::int64;
inline constexpr DType kBFloat16 = DType::bfloat16;
inline constexpr DType kFloat16 = DType::float16;
inline constexpr DType kBool = DType::boolean;
inline constexpr DType kInt32 = DType::int32;
inline constexpr DType kInt8 = DType::int8;
inline constexpr DType kUInt8 = DType::uint8;

inline size_t itemsize(DType t) {
  switch (t) {
    case DType::float32:
    case DType::int32: return 4;
    case DType::bfloat16:
    case DType::float16: return 2;
    case DType::boolean:
    case DType::int8:
    case DType::uint8: return 1;
    default: return 8;
  }
}
inline bool is_floating(DType t) {
  return t == DType::float32 || t == DType::float64 || t == DType::bfloat16 || t == DType::float16;
}
// A storage-only floating type: no kernel computes in it; kernels widen it to float32.
inline bool is_reduced_precision(DType t) { return t == DType::bfloat16 || t == DType::float16; }

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int64: return "int64";
    case DType::bfloat16: return "bfloat16";
    case DType::float16: return "float16";
    case DType::boolean: return "bool";
    case DType::int32: return "int32";
    case DType::int8: return "int8";
    case DType::uint8: return "uint8";
  }
  return "?";
}

// The 16-bit floating types, storage only: converting from float rounds to nearest even (NaN
// stays NaN, float16 overflows to infinity past 65504), converting to float is exact. No
// arithmetic: a kernel that meets one widens it first, so nothing accumulates in 16 bits by
// accident. `Codec` holds the two conversions and the largest integer up to which every integer
// is exact (sums of small integers: the fingerprints' codes).
template <class Codec>
struct reduced_float {
  uint16_t bits = 0;
  reduced_float() = default;
  template <class A>
    requires std::is_arithmetic_v<A>
  explicit reduced_float(A v) : bits(Codec::encode(float(v))) {}
  template <class Other>
    requires(!std::is_same_v<Other, Codec>)
  explicit reduced_float(reduced_float<Other> v) : bits(Codec::encode(float(v))) {}
  explicit operator float() const { return Codec::decode(bits); }
  template <class A>
    requires(std::is_arithmetic_v<A> && !std::is_same_v<A, float>)
  explicit operator A() const { return A(float(*this)); }
  friend bool operator==(reduced_float a, reduced_float b) { return float(a) == float(b); }
  static constexpr double exact_integers = Codec::exact_integers;
};

// bfloat16: the top 16 bits of a float32 (8 exponent bits, 7 mantissa bits).
struct BFloat16Codec {
  static constexpr double exact_integers = 256.0;
  static uint16_t encode(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  static float decode(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
};

// float16: IEEE binary16 (5 exponent bits, 10 mantissa bits; largest finite 65504).
struct Float16Codec {
  static constexpr double exact_integers = 2048.0;
  static uint16_t encode(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
    if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: infinity
    if (a < 0x38800000u)                           // below 2^-14: a subnormal, in units of 2^-24
      return sign | uint16_t(std::nearbyint(std::bit_cast<float>(a) * 16777216.0f));
    a += 0xc8000fffu + ((a >> 13) & 1u);  // exponent rebiased (127 -> 15), rounded to nearest even
    return sign | uint16_t(a >> 13);
  }
  static float decode(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(float(m) * 5.9604644775390625e-8f));
    if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
    return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
  }
};

using bfloat16 = reduced_float<BFloat16Codec>;
using float16 = reduced_float<Float16Codec>;
static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2);

template <class T>
inline constexpr bool is_reduced_float_v = false;
template <class C>
inline constexpr bool is_reduced_float_v<reduced_float<C>> = true;

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::float32; }
template <>
constexpr DType dtype_of<double>() { return DType::float64; }
template <>
constexpr DType dtype_of<int64_t>() { return DType::int64; }
template <>
constexpr DType dtype_of<bfloat16>() { return DType::bfloat16; }
template <>
constexpr DType dtype_of<float16>() { return DType::float16; }
template <>
constexpr DType dtype_of<bool>() { return DType::boolean; }
template <>
constexpr DType dtype_of<int32_t>() { return DType::int32; }
template <>
constexpr DType dtype_of<int8_t>() { return DType::int8; }
template <>
constexpr DType dtype_of<uint8_t>() { return DType::uint8; }

// Calls fn(T{}) with T the C++ type of `t`, for code that computes in T: float32, float64, int64.
// A bfloat16 tensor that reaches one is an op without a bfloat16 kernel: an error naming `op`.
template <class Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn, const char* op = "dtype") {
  switch (t) {
    case DType::float32: return fn(float{});
    case DType::float64: return fn(double{});
    case DType::int64: return fn(int64_t{});
    default: break;
  }
  if (is_reduced_precision(t))
    GLOBE_FAIL("[", op, "] has no ", dtype_name(t), " kernel here (float32, float64 and int64 only): cast with ",
               "to(float32) first, or run it under mixed precision, whose kernels widen 16-bit floats");
  GLOBE_FAIL("[", op, "] has no ", dtype_name(t), " kernel (float32, float64 and int64 only): cast it with ",
             "to_dtype first (Python: .long() or .float())");
}

// visit_dtype's types and the narrow integers: for sums alone (a partial_sum reduced in boxing or
// a collective, gradients accumulated) and + and * by an integer, which OneFlow's integer tensors
// take too. Not bool.
template <class Fn>
decltype(auto) visit_summable(DType t, Fn&& fn, const char* op = "sum") {
  switch (t) {
    case DType::int32: return fn(int32_t{});
    case DType::int8: return fn(int8_t{});
    case DType::uint8: return fn(uint8_t{});
    default: return visit_dtype(t, fn, op);
  }
}

// visit_summable's types and bool: every dtype a kernel reads as it is stored, for code that
// compares, selects or converts values but does no arithmetic in them (comparisons' inputs,
// where's operands, casts).
template <class Fn>
decltype(auto) visit_exact(DType t, Fn&& fn, const char* op = "dtype") {
  if (t == DType::boolean) return fn(bool{});
  return visit_summable(t, fn, op);
}

// A condition's (where, masked_fill): bool, or int64 read as non-zero (ops check which before).
template <class Fn>
decltype(auto) visit_condition(DType t, Fn&& fn) {
  if (t == DType::boolean) return fn(bool{});
  return fn(int64_t{});
}

// Every dtype, the 16-bit ones, bool and the narrow integers included, for code that only moves or
// converts values (copies, fills, transfers): the one place dtypes become types.
template <class Fn>
decltype(auto) visit_stored(DType t, Fn&& fn) {
  if (t == DType::bfloat16) return fn(bfloat16{});
  if (t == DType::float16) return fn(float16{});
  return visit_exact(t, fn);
}

// Same as visit_dtype, floating types only; `op` names the caller in the error.
template <class Fn>
decltype(auto) visit_floating(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::float32: return fn(float{});
    case DType::float64: return fn(double{});
    default: break;
  }
  GLOBE_FAIL("[", op, "] ", is_floating(t) ? "has no " : "expects a floating dtype, not ", dtype_name(t),
             is_floating(t) ? " kernel here (float32 and float64 only): cast with to(float32) first, or run it "
                              "under mixed precision, whose kernels widen 16-bit floats"
                            : "");
}

}  // namespace globe
