// Deterministic mode's product (core/deterministic.h): every output element's bits fixed by the
// global shapes alone, whichever rank computes it and whatever else that rank holds.
#pragma once

#include <cstdint>

#include "globe/core/tensor.h"

namespace globe::kernels {

// a [..., n, k] @ b [..., k, m] -> a new [batch..., n, m] (`out_shape`, batch dims already
// broadcast), each element an exactly specified sum (DeviceKernels::fixed_order_gemm): per leaf
// of `leaf` consecutive k, fused multiply-adds in k order; the leaves added in tree_order.h's tree.
// BLAS gives no such promise: its value for one row can change with the call's row count or
// its thread split. 16-bit operands are multiplied in float32 and the result rounded once. k > 0.
// `bias` (optional, broadcastable to out_shape) is then added: the bits of a separate add after
// the product, in the kernel's own store where the bias is one value per column.
Tensor fixed_order_matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, int64_t leaf,
                          const Tensor& bias = Tensor());

}  // namespace globe::kernels
