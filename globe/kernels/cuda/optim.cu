// The CUDA table's optimizer updates and clip_grad_norm's sum of squares. The update formulas are
// the CPU table's (kernels/cpu/optim_updates.cpp), one thread per element with the constants cast
// to the parameter's type the same way; the GPU's sqrt and division are correctly rounded, as the
// CPU's, so only FMA contraction can make the last bit differ.
#include <cuda_runtime.h>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/kernels.h"
#include "globe/kernels/cuda/strided.cuh"

namespace globe::kernels::cuda {

namespace {

template <class T>
__global__ void sgd_kernel(int64_t n, T* p, const T* g, T* buf, T lr, T wd, T mom, T damp, bool first, bool nesterov) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  if (buf == nullptr) {
    p[j] -= wd == T(0) ? lr * g[j] : lr * (g[j] + wd * p[j]);
    return;
  }
  const T d = g[j] + wd * p[j];
  buf[j] = first ? d : mom * buf[j] + damp * d;
  p[j] -= lr * (nesterov ? d + mom * buf[j] : buf[j]);
}

template <class T>
struct AdamConstants {
  T b1, b2, one_minus_b1, one_minus_b2, step_size, decay, bc2s, eps, wd;
  bool decoupled;
};

template <class T>
__global__ void adam_kernel(int64_t n, T* p, const T* g, T* m, T* v, AdamConstants<T> k) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  T grad = g[j];
  if (k.decoupled) {
    p[j] *= k.decay;
  } else {
    grad += k.wd * p[j];
  }
  m[j] = k.b1 * m[j] + k.one_minus_b1 * grad;
  v[j] = k.b2 * v[j] + k.one_minus_b2 * grad * grad;
  p[j] -= k.step_size * m[j] / (sqrt(v[j]) / k.bc2s + k.eps);
}

// Each block sums the squares of a grid-strided share into one double; the partial sums are added
// on the host (a few hundred doubles), which also makes the result independent of atomics' order.
template <class T>
__global__ void squares_kernel(int64_t n, const T* a, double* partial) {
  __shared__ double lanes[kThreads];
  double s = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double x = double(a[i]);
    s += x * x;
  }
  lanes[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) lanes[threadIdx.x] += lanes[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = lanes[0];
}

}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buffer, const SgdStep& s) {
  const int64_t n = param.numel();
  if (n == 0) return;
  visit_floating(param.dtype(), "SGD", [&](auto tag) {
    using T = decltype(tag);
    T* buf = s.momentum == 0 ? nullptr : ptr<T>(buffer);
    sgd_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(param)>>>(
        n, ptr<T>(param), ptr<T>(grad), buf, T(s.lr), T(s.weight_decay), T(s.momentum), T(1 - s.dampening), s.first,
        s.nesterov);
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "SGD");
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const AdamStep& s) {
  const int64_t n = param.numel();
  if (n == 0) return;
  visit_floating(param.dtype(), "Adam", [&](auto tag) {
    using T = decltype(tag);
    const AdamConstants<T> k{T(s.beta1),     T(s.beta2), T(1 - s.beta1), T(1 - s.beta2), T(s.step_size),
                             T(s.decay),     T(s.bc2_sqrt), T(s.eps),    T(s.weight_decay), s.decoupled};
    adam_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(param)>>>(n, ptr<T>(param), ptr<T>(grad),
                                                                     ptr<T>(exp_avg), ptr<T>(exp_avg_sq), k);
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), s.decoupled ? "AdamW" : "Adam");
}

double sum_of_squares(const Tensor& a_in) {
  const Tensor a = device_dense(a_in);
  const int64_t n = a.numel();
  if (n == 0) return 0.0;
  const int blocks = int(std::min<int64_t>(256, int64_t(blocks_for(n))));
  Tensor partial = Tensor::uninitialized({blocks}, kFloat64, a.device());
  visit_floating(a.dtype(), "clip_grad_norm", [&](auto tag) {
    using T = decltype(tag);
    squares_kernel<T><<<blocks, kThreads, 0, stream_of(a)>>>(n, ptr<T>(a), ptr<double>(partial));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "clip_grad_norm");
  double total = 0;
  for (double x : partial.to_vector<double>()) total += x;  // waits for the kernel: the norm is a host value
  return total;
}

}  // namespace globe::kernels::cuda
