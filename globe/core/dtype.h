// Element types. float32 is the working type, float64 serves gradient checks, int64 holds indices,
// bfloat16 is a storage type for mixed precision: kernels widen it to float32, compute and
// accumulate there, and round the result once (kernels/via_float32.h; docs/design.md §17).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "globe/base/error.h"

namespace globe {

enum class DType : uint8_t { float32, float64, int64, bfloat16 };

inline constexpr DType kFloat32 = DType::float32;
inline constexpr DType kFloat64 = DType::float64;
inline constexpr DType kInt64 = DType::int64;
inline constexpr DType kBFloat16 = DType::bfloat16;

inline size_t itemsize(DType t) {
  switch (t) {
    case DType::float32: return 4;
    case DType::bfloat16: return 2;
    default: return 8;
  }
}
inline bool is_floating(DType t) { return t != DType::int64; }
// A storage-only floating type: no kernel computes in it; kernels widen it to float32.
inline bool is_reduced_precision(DType t) { return t == DType::bfloat16; }

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int64: return "int64";
    case DType::bfloat16: return "bfloat16";
  }
  return "?";
}

// bfloat16: the top 16 bits of a float32 (8 exponent bits, 7 mantissa bits). Converting from
// float rounds to nearest even (NaN stays NaN); to float is exact. No arithmetic: a kernel that
// meets one widens it first, so nothing accumulates in 8 bits by accident.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  template <class A>
    requires std::is_arithmetic_v<A>
  explicit bfloat16(A v) : bits(round_bits(float(v))) {}
  explicit operator float() const { return std::bit_cast<float>(uint32_t(bits) << 16); }
  template <class A>
    requires(std::is_arithmetic_v<A> && !std::is_same_v<A, float>)
  explicit operator A() const { return A(float(*this)); }
  friend bool operator==(bfloat16 a, bfloat16 b) { return float(a) == float(b); }

  static uint16_t round_bits(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
};
static_assert(sizeof(bfloat16) == 2);

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
  GLOBE_FAIL("[", op, "] has no ", dtype_name(t), " kernel here (float32, float64 and int64 only): cast with ",
             "to(float32) first, or run it under mixed precision, whose kernels widen bfloat16");
}

// Every dtype, bfloat16 included, for code that only moves or converts values (copies, fills,
// transfers): the one place dtypes become types.
template <class Fn>
decltype(auto) visit_stored(DType t, Fn&& fn) {
  if (t == DType::bfloat16) return fn(bfloat16{});
  return visit_dtype(t, fn);
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
                              "under mixed precision, whose kernels widen bfloat16"
                            : "");
}

}  // namespace globe
