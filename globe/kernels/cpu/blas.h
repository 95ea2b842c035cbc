// The BLAS call every product goes through: c = alpha a b + beta c on row-major operands, float or
// double (OpenBLAS, or whichever CBLAS the build found).
#pragma once

#include <cblas.h>

#include <cstdint>
#include <type_traits>

#include "globe/core/tensor.h"

namespace globe::kernels {

// How BLAS reads the trailing 2-D blocks of `t`: transposed or not, and their leading dim; `t`
// itself where its strides allow either, else a contiguous copy (defined in matmul.cpp).
struct BlasView {
  Tensor t;
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};
BlasView blas_view(const Tensor& t);

// c [n, m] (leading dim ldc) = a [n, k] b [k, m] (each as `ta` / `tb` says), or += with
// `accumulate` (beta = 1: c holds something to add to, a bias, and BLAS skips its zeroing pass).
template <class T>
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t n, int64_t m, int64_t k, const T* a, int64_t lda,
          const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate = false) {
  const T beta = accumulate ? T(1) : T(0);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, n, m, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, n, m, k, 1.0, a, lda, b, ldb, beta, c, ldc);
  }
}

// A GEMM on bfloat16 operands with a float32 result and float32 accumulation (OpenBLAS's
// cblas_sbgemm signature), or null where the BLAS has none: the loaded OpenBLAS is asked at run
// time (Debian's 0.3.21 is built without it). matmul.cpp's bf16_gemm_path() names what runs.
using Bf16Gemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                          const uint16_t*, blasint, const uint16_t*, blasint, float, float*, blasint);
Bf16Gemm bf16_gemm();

// c (float) = a b (+ c) on bfloat16 operands through bf16_gemm().
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t n, int64_t m, int64_t k, const bfloat16* a,
                 int64_t lda, const bfloat16* b, int64_t ldb, float* c, int64_t ldc, bool accumulate = false) {
  bf16_gemm()(CblasRowMajor, ta, tb, n, m, k, 1.0f, reinterpret_cast<const uint16_t*>(a), lda,
              reinterpret_cast<const uint16_t*>(b), ldb, accumulate ? 1.0f : 0.0f, c, ldc);
}

}  // namespace globe::kernels
