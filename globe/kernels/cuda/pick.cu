// The CUDA table's causal_fill, pick and pick_backward (kernels/cpu/nn.h describes each): one thread
// per element or row. An index outside [0, classes) cannot be reported from here without a host
// synchronisation, so pick leaves such a row 0 (the CPU throws naming it); cross_entropy's targets
// are checked where they are made.
#include <cuda_runtime.h>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/kernels.h"
#include "globe/kernels/cuda/strided.cuh"

namespace globe::kernels::cuda {

namespace {

template <class T>
__global__ void causal_fill_kernel(int64_t n, int64_t rows, int64_t cols, int64_t r0, int64_t c0, const T* x, T* out,
                                   T value) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n) return;
  const int64_t j = e % cols, i = (e / cols) % rows;
  out[e] = j + c0 <= i + r0 ? x[e] : value;
}

template <class T>
__global__ void pick_kernel(int64_t rows, int64_t cols, int64_t c0, int64_t classes, const T* x, const int64_t* index,
                            T* out) {
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int64_t k = index[r], j = k - c0;
  out[r] = k >= 0 && k < classes && j >= 0 && j < cols ? x[r * cols + j] : T(0);
}

template <class T>
__global__ void pick_backward_kernel(int64_t rows, int64_t cols, int64_t c0, const T* g, const int64_t* index, T* out) {
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int64_t j = index[r] - c0;
  if (j >= 0 && j < cols) out[r * cols + j] = g[r];
}

}  // namespace

Tensor causal_fill(const Tensor& x_in, double value, int64_t r0, int64_t c0) {
  const Tensor x = device_dense(x_in);
  Tensor out = Tensor::uninitialized(x.shape(), x.dtype(), x.device());
  const int64_t nd = x.dim(), n = x.numel();
  if (n == 0) return out;
  const int64_t rows = x.shape()[size_t(nd - 2)], cols = x.shape()[size_t(nd - 1)];
  visit_floating(x.dtype(), "causal_fill", [&](auto tag) {
    using T = decltype(tag);
    causal_fill_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(x)>>>(n, rows, cols, r0, c0, ptr<T>(x), ptr<T>(out),
                                                                         T(value));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "causal_fill");
  return out;
}

Tensor pick(const Tensor& x_in, const Tensor& index_in, int64_t c0, int64_t classes) {
  const Tensor x = device_dense(x_in), index = device_dense(index_in);
  Tensor out = Tensor::uninitialized(index.shape(), x.dtype(), x.device());
  const int64_t rows = index.numel(), cols = x.shape().back();
  if (rows == 0) return out;
  visit_floating(x.dtype(), "pick", [&](auto tag) {
    using T = decltype(tag);
    pick_kernel<T><<<blocks_for(rows), kThreads, 0, stream_of(x)>>>(rows, cols, c0, classes, ptr<T>(x),
                                                                     ptr<int64_t>(index), ptr<T>(out));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "pick");
  return out;
}

Tensor pick_backward(const Tensor& grad, const Tensor& index_in, const Shape& out_shape, int64_t c0) {
  const Tensor g = device_dense(grad), index = device_dense(index_in);
  Tensor out = Tensor::empty(out_shape, g.dtype(), g.device());
  const int64_t rows = index.numel(), cols = out_shape.back();
  if (rows == 0) return out;
  visit_floating(g.dtype(), "pick_backward", [&](auto tag) {
    using T = decltype(tag);
    pick_backward_kernel<T><<<blocks_for(rows), kThreads, 0, stream_of(g)>>>(rows, cols, c0, ptr<T>(g),
                                                                              ptr<int64_t>(index), ptr<T>(out));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "pick_backward");
  return out;
}

}  // namespace globe::kernels::cuda
