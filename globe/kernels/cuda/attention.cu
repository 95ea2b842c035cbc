// The CUDA table's fused causal attention (kernels/cpu/attention.h): q, k, v copied dense when they are
// not already, the products as cuBLAS strided-batched GEMMs in full float32 / float64 precision,
// and the causal softmax and its backward as one block per row, all on the device's compute
// stream. Unlike the CPU, y and dqkv come back contiguous (not in q's / qkv's memory order), and
// the products compute the masked half too (its entries are zeroed or multiplied by zeros).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/cublas.h"
#include "globe/kernels/cuda/kernels.h"

namespace globe::kernels::cuda {

namespace {

constexpr const char* kOp = "causal_attention";

// The sizes of a packed input [3, ..., T, D]: `count` matrices of n x d per operand.
struct Sizes {
  Shape batch;  // the dims between the 3 and [T, D]
  int64_t count = 0, n = 0, d = 0;
};

Sizes sizes_of(const Tensor& qkv, const char* op) {
  const Shape& s = qkv.shape();
  GLOBE_CHECK(s.size() >= 3 && s[0] == 3, "[", op, "] expects packed q, k, v [3, ..., T, D], got ", shape_str(s));
  Sizes z;
  z.batch = Shape(s.begin() + 1, s.end() - 2);
  z.count = numel_of(z.batch);
  z.n = s[s.size() - 2];
  z.d = s.back();
  // cuBLAS takes 32-bit sizes and batch counts; the softmax launches one block per row.
  GLOBE_CHECK(z.n <= INT32_MAX && z.d <= INT32_MAX && z.count <= INT32_MAX && z.count * z.n <= INT32_MAX, "[", op,
              "] an input this large (", shape_str(s), ") exceeds the CUDA kernels' 32-bit sizes");
  return z;
}

Shape probs_shape(const Sizes& z) {
  Shape p = z.batch;
  p.insert(p.end(), {z.n, z.n});
  return p;
}

constexpr unsigned kFullMask = 0xffffffffu;

// x * s rounded before any later subtraction (no FMA contraction), as the CPU's softmax rounds it.
__device__ inline float scaled(float x, float s) { return __fmul_rn(x, s); }
__device__ inline double scaled(double x, double s) { return __dmul_rn(x, s); }
__device__ inline float exp_of(float x) { return expf(x); }
__device__ inline double exp_of(double x) { return exp(x); }

template <class A, bool kMax>
__device__ A warp_reduce(A v) {
  for (int o = 16; o > 0; o /= 2) {
    const A other = __shfl_xor_sync(kFullMask, v, o);
    v = kMax ? (other > v ? other : v) : v + other;
  }
  return v;
}

// The max or sum of `v` over the block (blockDim.x a multiple of 32, at most 1024), returned to
// every thread. `slots`: 32 shared entries used by this reduction only, so that a later one never
// overwrites slots[0] before every thread has read it.
template <class A, bool kMax>
__device__ A block_reduce(A v, A* slots) {
  const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32), warps = int(blockDim.x / 32);
  v = warp_reduce<A, kMax>(v);
  if (lane == 0) slots[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? slots[lane] : (kMax ? A(-INFINITY) : A(0));
    v = warp_reduce<A, kMax>(v);
    if (lane == 0) slots[0] = v;
  }
  __syncthreads();
  return slots[0];
}

// In place, per block one row of the [n, n] matrices stacked in `s` (row i of a matrix keeps
// columns j <= i): s = softmax(s * scale) over the kept columns, 0 on the others. The sum runs in
// A (float64 for float32, as the CPU's). Each thread rewrites only entries it alone reads, after
// both reductions, so in place is safe.
template <class T, class A>
__global__ void causal_softmax_kernel(T* s, int64_t n, T scale) {
  __shared__ T max_slots[32];
  __shared__ A sum_slots[32];
  const int64_t row = blockIdx.x, keep = row % n + 1;
  T* x = s + row * n;
  T mx = T(-INFINITY);
  for (int64_t j = threadIdx.x; j < keep; j += blockDim.x) {
    const T y = scaled(x[j], scale);
    mx = y > mx ? y : mx;
  }
  mx = block_reduce<T, true>(mx, max_slots);
  A sum = A(0);
  for (int64_t j = threadIdx.x; j < keep; j += blockDim.x) sum += A(exp_of(scaled(x[j], scale) - mx));
  sum = block_reduce<A, false>(sum, sum_slots);
  const T inv = T(1.0 / double(sum));
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) x[j] = j < keep ? exp_of(scaled(x[j], scale) - mx) * inv : T(0);
}

// In place, per block one row: g (dP) becomes dS = scale * p * (g - sum(g * p)), the sum over the
// row's kept columns in float64; the masked columns (p = 0 there) become 0.
template <class T>
__global__ void causal_softmax_backward_kernel(const T* p, T* g, int64_t n, T scale) {
  __shared__ double sum_slots[32];
  const int64_t row = blockIdx.x, keep = row % n + 1;
  const T* pr = p + row * n;
  T* gr = g + row * n;
  double dot = 0.0;
  for (int64_t j = threadIdx.x; j < keep; j += blockDim.x) dot += double(gr[j]) * double(pr[j]);
  const T d = T(block_reduce<double, false>(dot, sum_slots));
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) gr[j] = j < keep ? scale * (pr[j] * (gr[j] - d)) : T(0);
}

// Threads for a row of n: a power of two from a warp up to 256 (longer rows loop).
unsigned row_threads(int64_t n) {
  unsigned t = 32;
  while (t < 256 && int64_t(t) < n) t *= 2;
  return t;
}

// P = causal softmax of q k^T * scale, written to `p` ([count, n, n], the scores first).
template <class T>
void probabilities(cublasHandle_t h, cudaStream_t stream, const Sizes& z, const T* q, const T* k, T scale, T* p) {
  const int64_t nd = z.n * z.d, nn = z.n * z.n;
  gemm_rows<T>(h, kOp, false, true, z.n, z.n, z.d, q, z.d, nd, k, z.d, nd, T(0), p, z.n, nn, z.count);  // S = q k^T
  using A = std::conditional_t<std::is_same_v<T, float>, double, T>;
  causal_softmax_kernel<T, A><<<unsigned(z.count * z.n), row_threads(z.n), 0, stream>>>(p, z.n, scale);
  GLOBE_CUDA_CHECK(cudaGetLastError(), "causal_attention");
}

}  // namespace

Tensor causal_attention(const Tensor& qkv, double scale, Tensor* probs) {
  const Sizes z = sizes_of(qkv, "causal_attention");
  const Device device = qkv.device();
  const Shape& s = qkv.shape();
  Tensor y = Tensor::uninitialized(Shape(s.begin() + 1, s.end()), qkv.dtype(), device);
  // P goes to the caller's tensor when asked for, else to scratch.
  const Tensor p = Tensor::uninitialized(probs_shape(z), qkv.dtype(), device);
  if (probs) *probs = p;
  if (y.numel() == 0) return y;
  // q, k, v dense in one copy: each is then count matrices [T, D] back to back.
  const Tensor dense = device_dense(qkv);
  cublasHandle_t h = cublas_handle(device);
  auto stream = static_cast<cudaStream_t>(compute_stream(device).handle);
  visit_floating(qkv.dtype(), "causal_attention", [&](auto tag) {
    using T = decltype(tag);
    const int64_t per = z.count * z.n * z.d, nd = z.n * z.d, nn = z.n * z.n;
    const T* q = ptr<T>(dense);
    const T* k = q + per;
    const T* v = k + per;
    T* pp = ptr<T>(p);
    probabilities<T>(h, stream, z, q, k, T(scale), pp);
    // P v
    gemm_rows<T>(h, kOp, false, false, z.n, z.d, z.n, pp, z.n, nn, v, z.d, nd, T(0), ptr<T>(y), z.d, nd, z.count);
  });
  return y;
}

Tensor causal_attention_backward(const Tensor& qkv, const Tensor& gy, double scale, const Tensor& probs) {
  const Sizes z = sizes_of(qkv, "causal_attention_backward");
  const Device device = qkv.device();
  const Shape& s = qkv.shape();
  GLOBE_CHECK(gy.shape() == Shape(s.begin() + 1, s.end()) && gy.dtype() == qkv.dtype(),
              "[causal_attention_backward] expects the gradient of y ", shape_str(Shape(s.begin() + 1, s.end())),
              ", got ", shape_str(gy.shape()));
  const Shape p_shape = probs_shape(z);
  GLOBE_CHECK(!probs.defined() || (probs.shape() == p_shape && probs.dtype() == qkv.dtype()),
              "[causal_attention_backward] expects probabilities ", shape_str(p_shape), ", got ",
              shape_str(probs.defined() ? probs.shape() : Shape{}));
  Tensor dqkv = Tensor::uninitialized(s, qkv.dtype(), device);
  if (dqkv.numel() == 0) return dqkv;
  const Tensor dense = device_dense(qkv), g = device_dense(gy);
  const Tensor p = probs.defined() ? device_dense(probs) : Tensor::uninitialized(p_shape, qkv.dtype(), device);
  const Tensor dp = Tensor::uninitialized(p_shape, qkv.dtype(), device);  // dP, then dS in place
  cublasHandle_t h = cublas_handle(device);
  auto stream = static_cast<cudaStream_t>(compute_stream(device).handle);
  visit_floating(qkv.dtype(), "causal_attention_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t per = z.count * z.n * z.d, nd = z.n * z.d, nn = z.n * z.n, n = z.n, d = z.d, c = z.count;
    const T* q = ptr<T>(dense);
    const T* k = q + per;
    const T* v = k + per;
    const T* gp = ptr<T>(g);
    T* pp = ptr<T>(p);
    T* ds = ptr<T>(dp);
    T* dq = ptr<T>(dqkv);
    if (!probs.defined()) probabilities<T>(h, stream, z, q, k, T(scale), pp);
    gemm_rows<T>(h, kOp, false, true, n, n, d, gp, d, nd, v, d, nd, T(0), ds, n, nn, c);            // dP = gy v^T
    gemm_rows<T>(h, kOp, true, false, n, d, n, pp, n, nn, gp, d, nd, T(0), dq + 2 * per, d, nd, c);  // dV = P^T gy
    causal_softmax_backward_kernel<T><<<unsigned(c * n), row_threads(n), 0, stream>>>(pp, ds, n, T(scale));
    GLOBE_CUDA_CHECK(cudaGetLastError(), "causal_attention_backward");
    gemm_rows<T>(h, kOp, false, false, n, d, n, ds, n, nn, k, d, nd, T(0), dq, d, nd, c);      // dQ = dS k
    gemm_rows<T>(h, kOp, true, false, n, d, n, ds, n, nn, q, d, nd, T(0), dq + per, d, nd, c);  // dK = dS^T q
  });
  return dqkv;
}

}  // namespace globe::kernels::cuda
