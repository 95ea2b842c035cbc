// Matrix multiply on local tensors through BLAS (cblas_sgemm / cblas_dgemm).
#pragma once

#include "globe/core/tensor.h"

namespace globe::kernels {

// a [..., n, k] @ b [..., k, m] (+ bias) -> out [batch..., n, m] (batch dims already broadcast into
// `out_shape`). Transposed views are passed to BLAS as transposes, not copied. A defined `bias`
// (broadcastable to out_shape) is written into the output first and the GEMM adds onto it, so the
// sum costs no pass of its own.
Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& bias = Tensor());

}  // namespace globe::kernels
