// Matrix multiply on local tensors through BLAS (cblas_sgemm / cblas_dgemm).
#pragma once

#include "globe/core/tensor.h"

namespace globe::kernels {

// a [..., n, k] @ b [..., k, m] (+ bias) -> out [batch..., n, m] (batch dims already broadcast into
// `out_shape`). Transposed views are passed to BLAS as transposes, not copied. A defined `bias`
// (broadcastable to out_shape) is written into the output first and the GEMM adds onto it, so the
// sum costs no pass of its own.
// float32 and float64 in their own type; bfloat16 through the BLAS's bf16 GEMM (float32
// accumulation, the result rounded once) where it has one, else through sgemm on operands widened
// to float32 (kernels/via_float32.h): the same products, rounded the same way, only slower.
Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& bias = Tensor());

// The GEMM that bfloat16 products run on this machine, for logs and benchmarks.
const char* bf16_gemm_path();

// The CPU's DeviceKernels::fixed_order_gemm (device_kernels.h): exactly specified sums on AVX-512,
// AVX2 + FMA or scalar code, spread over as many threads as BLAS was given (fixed_order_gemm.cpp).
void fixed_order_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, int64_t leaf);

namespace detail {
// Test hook: fixed_order_gemm runs the named code ("avx512", "avx2", "plain"; "" or null: the
// best the CPU runs). False, and nothing changed, where the CPU cannot run it.
bool use_fixed_order_code_for_test(const char* name);
}  // namespace detail

}  // namespace globe::kernels
