// Deterministic mode's product (core/deterministic.h): every output element's bits fixed by the
// global shapes alone, whichever rank computes it and whatever else that rank holds.
#pragma once

#include <cstdint>

#include "globe/core/tensor.h"

namespace globe::kernels {

// a [..., n, k] @ b [..., k, m] -> a new [batch..., n, m] (`out_shape`, batch dims already
// broadcast): the inner dim cut into leaves of `leaf` (k / leaf of them), each leaf's product
// computed in [tile_n, tile_m] blocks of each batch entry, one GEMM call per block
// (DeviceKernels::matmul_tiles), the leaves' products added in tree_sum's order. 16-bit operands
// are multiplied in float32 and the result rounded once. k > 0.
Tensor fixed_order_matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, int64_t leaf, int64_t tile_n,
                          int64_t tile_m);

}  // namespace globe::kernels
