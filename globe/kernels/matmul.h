// Matrix multiply on local tensors through BLAS (cblas_sgemm / cblas_dgemm).
#pragma once

#include "globe/core/tensor.h"

namespace globe::kernels {

// a [..., n, k] @ b [..., k, m] -> out [batch..., n, m] (batch dims already broadcast into
// `out_shape`). Transposed views are passed to BLAS as transposes, not copied.
Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape);

}  // namespace globe::kernels
