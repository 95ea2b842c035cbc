// The CUDA table's fixed_order_gemm (device_kernels.h): one thread per output element, the same
// exactly specified sum as the CPU's (fixed_order_gemm.cpp): per leaf a chain of fused
// multiply-adds from 0 in k order, the leaves added in tree_order.h's tree. So a GPU gives the CPU's
// bits. Plain and slow (no shared-memory tiles): deterministic mode's first CUDA version.
//
// Written and compile-checked on a machine without a GPU: this file has not run yet.
#include <cuda_runtime.h>

#include "globe/base/error.h"
#include "globe/device/cuda/cuda_check.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/kernels.h"
#include "globe/kernels/tree_order.h"

namespace globe::kernels::cuda {

namespace {

constexpr int kSlots = 64;  // tree_slots of any int64_t leaf count

template <class T>
__global__ void fixed_order_kernel(int64_t entries, int64_t n, int64_t m, int64_t k, int64_t leaf, const T* a,
                                   int64_t sa, int64_t lda, int64_t acs, const T* b, int64_t sb, int64_t ldb,
                                   int64_t bcs, const T* bias, T* c) {
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= entries * n * m) return;
  const int64_t j = id % m, i = (id / m) % n, e = id / (n * m);
  const T* ar = a + e * sa + i * lda;
  const T* bc = b + e * sb + j * bcs;
  T slots[kSlots];
  auto piece = [&](int64_t l, int s) {
    T acc = 0;
    for (int64_t q = l * leaf; q < (l + 1) * leaf; ++q) acc = fma(ar[q * acs], bc[q * ldb], acc);
    slots[s] = acc;
  };
  auto add = [&](int s) { slots[s] = slots[s] + slots[s + 1]; };
  tree_walk(0, k / leaf, 0, piece, add);
  c[id] = bias ? slots[0] + bias[j] : slots[0];  // no bias adds nothing (0 would turn -0 into +0)
}

template <class T>
void launch(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, int64_t leaf) {
  const int64_t entries = out.shape()[0], n = out.shape()[1], m = out.shape()[2], k = a.shape()[2];
  const int64_t total = entries * n * m;
  if (total == 0) return;
  constexpr int kThreads = 256;
  fixed_order_kernel<T><<<unsigned((total + kThreads - 1) / kThreads), kThreads, 0, stream_of(out)>>>(
      entries, n, m, k, leaf, ptr<T>(a), a.strides()[0], a.strides()[1], a.strides()[2], ptr<T>(b),
      b.strides()[0], b.strides()[1], b.strides()[2], bias.defined() ? ptr<T>(bias) : nullptr, ptr<T>(out));
  GLOBE_CUDA_CHECK(cudaGetLastError(), "fixed_order_gemm");
}

}  // namespace

void fixed_order_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, int64_t leaf) {
  GLOBE_CHECK(leaf > 0 && a.shape()[2] % leaf == 0,
              "[matmul] fixed-order product: inner length ", a.shape()[2], " is not whole leaves of ", leaf);
  switch (a.dtype()) {
    case DType::float32: return launch<float>(out, a, b, bias, leaf);
    case DType::float64: return launch<double>(out, a, b, bias, leaf);
    default: GLOBE_FAIL("[matmul] fixed-order product takes float32 or float64, got ", dtype_name(a.dtype()));
  }
}

}  // namespace globe::kernels::cuda
