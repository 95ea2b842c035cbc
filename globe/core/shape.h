// Shapes and the small arithmetic on them shared by every layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace globe {

using Shape = std::vector<int64_t>;

// The most dims a tensor has: one limit for every device and exchange (the CUDA kernels' strided
// indexing carries shapes by value; the metadata rank exchange, global/meta_wire.h, is fixed width).
inline constexpr int kMaxDims = 8;
// Throws "[op] a tensor of N dims ([...]): tensors have at most 8" past the limit.
void check_dims(const Shape& shape, const char* op);

inline int64_t numel_of(const Shape& shape) {  // inline: every op and collective asks it
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}
// Row-major strides of a contiguous tensor of `shape`.
Shape contiguous_strides(const Shape& shape);
// "[2, 3]".
std::string shape_str(const Shape& shape);
// Normalises a possibly negative axis against `ndim`; throws "[op] dim d out of range ...".
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);
// Same against `shape`'s rank; the error names the shape.
int64_t normalize_dim(int64_t dim, const Shape& shape, const char* op);
// Numpy broadcasting of two shapes; throws "[op] shapes ... cannot broadcast".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace globe
