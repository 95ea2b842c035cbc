// cuBLAS for the CUDA table: one handle per device bound to the device's compute stream, and the
// strided-batched row-major GEMM that attention is written with (full float32 / float64 precision,
// or TF32 products where set_float32_matmul_precision allows them, kernels/matmul_precision.h);
// and the cuBLASLt handle and workspace that matmul runs on (matmul.cpp).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <type_traits>

#include "globe/core/tensor.h"
#include "globe/kernels/cuda/cublas_api.h"
#include "globe/kernels/matmul_precision.h"

namespace globe::kernels::cuda {

// Throws "[op] cuBLAS error: <status> (<call>)" unless `status` is success.
void check_cublas(cublasStatus_t status, const char* op, const char* call);

// The device's handle (created on first use, on the compute stream).
cublasHandle_t cublas_handle(const Device& device);

// The device's cuBLASLt handle and GEMM workspace, made on first use and kept for the process.
// cuBLASLt takes the stream per call; the workspace is only used on the compute stream, so GEMMs
// queued one after another share it without synchronising.
struct CublasLt {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};
CublasLt cublaslt(const Device& device);

inline cublasStatus_t gemm_strided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const float* alpha, const float* a, int lda, long long sa, const float* b, int ldb,
                                   long long sb, const float* beta, float* c, int ldc, long long sc, int count) {
  const cublasStatus_t mode =
      cublas_api().set_math_mode(h, float32_matmul_allows_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  if (mode != CUBLAS_STATUS_SUCCESS) return mode;
  return cublas_api().sgemm_strided_batched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count);
}

inline cublasStatus_t gemm_strided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const double* alpha, const double* a, int lda, long long sa, const double* b,
                                   int ldb, long long sb, const double* beta, double* c, int ldc, long long sc,
                                   int count) {
  return cublas_api().dgemm_strided_batched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count);
}

// For each of `count` entries, the dense row-major C [n, m] = op(A) op(B) + beta C (op(A) [n, k],
// op(B) [k, m]; `ta` / `tb`: A / B stored transposed), each operand's entries `s*` elements apart.
// cuBLAS is column-major, where a row-major buffer reads as its transpose: C^T = op(B)^T op(A)^T,
// so B goes first and each keeps its own transpose flag. Sizes must fit cuBLAS's 32-bit ints.
template <class T>
void gemm_rows(cublasHandle_t h, const char* op, bool ta, bool tb, int64_t n, int64_t m, int64_t k, const T* a,
               int64_t lda, int64_t sa, const T* b, int64_t ldb, int64_t sb, T beta, T* c, int64_t ldc, int64_t sc,
               int64_t count) {
  const T alpha = T(1);
  check_cublas(gemm_strided(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, int(m), int(n), int(k),
                            &alpha, b, int(ldb), sb, a, int(lda), sa, &beta, c, int(ldc), sc, int(count)),
               op, std::is_same_v<T, float> ? "cublasSgemmStridedBatched" : "cublasDgemmStridedBatched");
}

}  // namespace globe::kernels::cuda
