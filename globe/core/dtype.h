// Element types. float32 is the working type, float64 serves gradient checks, int64 holds indices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "globe/base/error.h"

namespace globe {

enum class DType : uint8_t { float32, float64, int64 };

inline constexpr DType kFloat32 = DType::float32;
inline constexpr DType kFloat64 = DType::float64;
inline constexpr DType kInt64 = DType::int64;

inline size_t itemsize(DType t) { return t == DType::float32 ? 4 : 8; }
inline bool is_floating(DType t) { return t != DType::int64; }

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int64: return "int64";
  }
  return "?";
}

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::float32; }
template <>
constexpr DType dtype_of<double>() { return DType::float64; }
template <>
constexpr DType dtype_of<int64_t>() { return DType::int64; }

// Calls fn(T{}) with T the C++ type of `t`: the one place dtypes become types.
template <class Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::float32: return fn(float{});
    case DType::float64: return fn(double{});
    case DType::int64: return fn(int64_t{});
  }
  GLOBE_FAIL("[dtype] unknown dtype ", int(t));
}

// Same, floating types only; `op` names the caller in the error.
template <class Fn>
decltype(auto) visit_floating(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::float32: return fn(float{});
    case DType::float64: return fn(double{});
    default: break;
  }
  GLOBE_FAIL("[", op, "] expects a floating dtype (float32 or float64), got ", dtype_name(t));
}

}  // namespace globe
