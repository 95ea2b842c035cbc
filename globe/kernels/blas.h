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

}  // namespace globe::kernels
