// The CUDA table's neural-network rows (kernels/cpu/nn.h describes each; kernels/cpu/nn.cpp and
// kernels/cpu/softmax_rows.h are the CPU versions whose formulas these follow). Row functions give each
// row one block of kRowThreads threads, which stride over the row and combine their partial results
// through warp shuffles and shared memory; row sums (softmax denominators, layer-norm moments,
// weight-grad sums) are taken in double as on the CPU. Every reduction combines in a fixed order,
// so results repeat bit for bit from run to run; they agree with the CPU within rounding (the sums
// group terms differently, and the GPU's exp differs from the CPU's by an ulp or two).
// Strided inputs are first made dense on the device; all work is queued on the device's compute
// stream and nothing waits on the host.
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <type_traits>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/kernels.h"

namespace globe::kernels::cuda {

namespace {

constexpr int kRowThreads = 256;  // threads per row block: a multiple of the warp size
constexpr int kWarps = kRowThreads / 32;
constexpr int kFlatThreads = 256;  // threads per block of the one-thread-per-element kernels
// More blocks than this would not run at once anyway; kernels loop over what is left.
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

unsigned row_grid(int64_t rows) { return unsigned(std::min(rows, kMaxBlocks)); }
unsigned flat_grid(int64_t n) { return unsigned(std::min((n + kFlatThreads - 1) / kFlatThreads, kMaxBlocks)); }

template <class T>
const T* in_ptr(const Tensor& t) {
  return static_cast<const T*>(t.device_data());
}
template <class T>
T* out_ptr(const Tensor& t) {
  return static_cast<T*>(t.device_data());
}

// The rows of x's last dim: numel / n (0 when n is 0).
int64_t rows_of(const Tensor& x) {
  const int64_t n = x.shape().back();
  return n == 0 ? 0 : x.numel() / n;
}

struct Sum {
  template <class V>
  __device__ V operator()(V a, V b) const {
    return a + b;
  }
};
// NaNs are skipped, as the CPU's `t > m ? t : m` skips them.
struct Max {
  template <class V>
  __device__ V operator()(V a, V b) const {
    return b > a ? b : a;
  }
};

// `v` combined over the block (blockDim.x == kRowThreads), the result in every thread. The order of
// combination is fixed, so the result is the same on every run.
template <class V, class Op>
__device__ V block_reduce(V v, Op op) {
  __shared__ V partial[kWarps];
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // a previous reduction's threads may still be reading `partial`
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  V r = partial[0];
  for (int w = 1; w < kWarps; ++w) r = op(r, partial[w]);
  return r;
}

__device__ double block_sum(double v) { return block_reduce(v, Sum{}); }

// Two sums at once: one pair of barriers instead of two.
__device__ void block_sum2(double& a, double& b) {
  __shared__ double partial[2][kWarps];
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    partial[0][threadIdx.x >> 5] = a;
    partial[1][threadIdx.x >> 5] = b;
  }
  __syncthreads();
  a = partial[0][0];
  b = partial[1][0];
  for (int w = 1; w < kWarps; ++w) {
    a += partial[0][w];
    b += partial[1][w];
  }
}

// e^v for v <= 0 (v = x - max), as the CPU's row loops compute it: float goes to 0 below -87 as
// exp_nonpositive does (NaN stays NaN), double is the plain exp.
template <class T>
__device__ T row_exp(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return v < -87.0f ? 0.0f : ::expf(v);
  } else {
    return ::exp(v);
  }
}

// A product rounded on its own, never fused into a following addition (the CPU rounds x * scale
// before subtracting the maximum, and fusing would change the last bit).
__device__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// ---- softmax

// Softmax of contiguous rows of n (the softmax dim is the last): max, then the sum of exponentials
// in double, then the output. x is read three times rather than cached, as a row can exceed shared
// memory; the rereads mostly hit L2. Float follows the CPU's float row loop (float exponentials),
// double the CPU's general loop.
template <class T>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t n, bool take_log) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    T mx = T(-INFINITY);
    for (int64_t j = threadIdx.x; j < n; j += kRowThreads) mx = Max{}(mx, xr[j]);
    mx = block_reduce(mx, Max{});
    double total = 0;
    for (int64_t j = threadIdx.x; j < n; j += kRowThreads) total += double(row_exp(T(xr[j] - mx)));
    total = block_sum(total);
    // A row of only -inf has max -inf: x - max is NaN and so is the row, as on the CPU.
    if (take_log) {
      const T lse = mx + T(::log(total));
      for (int64_t j = threadIdx.x; j < n; j += kRowThreads) yr[j] = xr[j] - lse;
    } else {
      const T inv = T(1.0 / total);
      for (int64_t j = threadIdx.x; j < n; j += kRowThreads) yr[j] = row_exp(T(xr[j] - mx)) * inv;
    }
  }
}

// Softmax along a dim that is not the last: `outer` blocks of [n, inner]; one thread per (outer,
// inner) column walks its n elements at stride `inner`, so neighbouring threads read neighbouring
// addresses. Exponentials in double, as the CPU's general loop.
template <class T>
__global__ void softmax_columns_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool take_log) {
  const int64_t columns = outer * inner;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < columns; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (c / inner) * n * inner + c % inner;
    const T* xc = x + base;
    T* yc = y + base;
    T mx = T(-INFINITY);
    for (int64_t j = 0; j < n; ++j) mx = Max{}(mx, xc[j * inner]);
    double total = 0;
    for (int64_t j = 0; j < n; ++j) total += ::exp(double(T(xc[j * inner] - mx)));
    if (take_log) {
      const T lse = mx + T(::log(total));
      for (int64_t j = 0; j < n; ++j) yc[j * inner] = xc[j * inner] - lse;
    } else {
      const double inv = 1.0 / total;
      for (int64_t j = 0; j < n; ++j) yc[j * inner] = T(::exp(double(T(xc[j * inner] - mx))) * inv);
    }
  }
}

// out = scale * y * (g - sum(g * y)) per row, the sum in double.
template <class T>
__global__ void softmax_backward_kernel(const T* y, const T* g, T* out, int64_t rows, int64_t n, T scale) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* yr = y + r * n;
    const T* gr = g + r * n;
    T* o = out + r * n;
    double dot = 0;
    for (int64_t j = threadIdx.x; j < n; j += kRowThreads) dot += double(gr[j]) * double(yr[j]);
    const T d = T(block_sum(dot));
    if (scale == T(1)) {
      for (int64_t j = threadIdx.x; j < n; j += kRowThreads) o[j] = yr[j] * (gr[j] - d);
    } else {
      for (int64_t j = threadIdx.x; j < n; j += kRowThreads) o[j] = scale * (yr[j] * (gr[j] - d));
    }
  }
}

// Causal softmax of x * scale: row r of the contiguous rows is row r % per + row0 of its logical
// matrix and keeps columns [0, keep); the rest are written as exact zeros. keep <= 0 (a negative
// row0) leaves a row of zeros, as the CPU's loop does.
template <class T>
__global__ void causal_softmax_kernel(const T* x, T* y, int64_t rows, int64_t per, int64_t row0, int64_t n, T scale) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const int64_t reach = r % per + row0 + 1, keep = reach < n ? reach : n;
    T mx = T(-INFINITY);
    for (int64_t j = threadIdx.x; j < keep; j += kRowThreads) mx = Max{}(mx, mul_rn(xr[j], scale));
    mx = block_reduce(mx, Max{});
    double total = 0;
    for (int64_t j = threadIdx.x; j < keep; j += kRowThreads)
      total += double(row_exp(T(mul_rn(xr[j], scale) - mx)));
    const T inv = T(1.0 / block_sum(total));
    for (int64_t j = threadIdx.x; j < n; j += kRowThreads)
      yr[j] = j < keep ? row_exp(T(mul_rn(xr[j], scale) - mx)) * inv : T(0);
  }
}

// ---- layer norm

struct Moments {
  double mean;
  double rstd;  // 1 / sqrt(biased variance + eps)
};

// A row's mean and rstd in double, two passes (mean first, then the squared deviations), as the
// CPU's row_moments; not centred (RMS norm), a mean of 0 and one pass.
template <class T>
__device__ Moments block_moments(const T* xr, int64_t n, double eps, bool centered) {
  double mean = 0;
  if (centered) {
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += kRowThreads) s += double(xr[j]);
    mean = block_sum(s) / double(n);
  }
  double sq = 0;
  for (int64_t j = threadIdx.x; j < n; j += kRowThreads) {
    const double dx = double(xr[j]) - mean;
    sq += dx * dx;
  }
  return {mean, 1.0 / ::sqrt(block_sum(sq) / double(n) + eps)};
}

// o = (x - mean) * rstd * w + b; w null reads as ones, b null as zeros.
template <class T>
__global__ void normalize_kernel(const T* x, const T* w, const T* b, T* out, int64_t rows, int64_t n, double eps,
                                 bool centered) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* o = out + r * n;
    const Moments mo = block_moments(xr, n, eps, centered);
    const T m = T(mo.mean), s = T(mo.rstd);
    for (int64_t j = threadIdx.x; j < n; j += kRowThreads) {
      const T xhat = (xr[j] - m) * s;
      o[j] = xhat * (w ? w[j] : T(1)) + (b ? b[j] : T(0));
    }
  }
}

// o = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w (w null: g). The first pass sums
// x and gw together; the second the squared deviations and gw * (x - mean), whose sum times rstd is
// the CPU's sum of gw * xhat. Not centred (RMS norm): the mean and mean(gw) are 0.
template <class T>
__global__ void normalize_backward_kernel(const T* g, const T* x, const T* w, T* out, int64_t rows, int64_t n,
                                          double eps, bool centered) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    const T* gr = g + r * n;
    T* o = out + r * n;
    double sx = 0, sg = 0;
    if (centered) {  // uniform across the block, so every thread reaches block_sum2 or none
      for (int64_t j = threadIdx.x; j < n; j += kRowThreads) {
        sx += double(xr[j]);
        sg += double(gr[j]) * (w ? double(w[j]) : 1.0);
      }
      block_sum2(sx, sg);
    }
    const double mean = sx / double(n);
    double sq = 0, sgd = 0;
    for (int64_t j = threadIdx.x; j < n; j += kRowThreads) {
      const double dx = double(xr[j]) - mean;
      sq += dx * dx;
      sgd += double(gr[j]) * (w ? double(w[j]) : 1.0) * dx;
    }
    block_sum2(sq, sgd);
    const double rstd = 1.0 / ::sqrt(sq / double(n) + eps);
    const T m = T(mean), s = T(rstd), mg = T(sg / double(n)), mgx = T(sgd * rstd / double(n));
    for (int64_t j = threadIdx.x; j < n; j += kRowThreads) {
      const T gw = w ? gr[j] * w[j] : gr[j];
      o[j] = s * (gw - mg - (xr[j] - m) * s * mgx);
    }
  }
}

// stats[2r], stats[2r + 1] = mean and rstd of row r.
template <class T>
__global__ void row_moments_kernel(const T* x, double* stats, int64_t rows, int64_t n, double eps, bool centered) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Moments mo = block_moments(x + r * n, n, eps, centered);
    if (threadIdx.x == 0) {
      stats[2 * r] = mo.mean;
      stats[2 * r + 1] = mo.rstd;
    }
  }
}

// The weight gradient sum_r g * xhat is a column sum: rather than atomics (whose order, and so
// whose float result, changes from run to run), each block sums one kTileCols-wide strip of
// columns over one chunk of rows into partial[chunk, n]; weight_grad_finish_kernel then adds the
// chunks of each column in order. Deterministic, and the threads of a warp read adjacent columns.
constexpr int kTileCols = 32, kTileRows = 8;

template <class T>
__global__ void weight_grad_partial_kernel(const T* g, const T* x, const double* stats, double* partial,
                                           int64_t rows, int64_t n, int64_t chunk) {
  __shared__ double tile[kTileRows][kTileCols + 1];
  const int64_t j = int64_t(blockIdx.x) * kTileCols + threadIdx.x;
  const int64_t r0 = int64_t(blockIdx.y) * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
  double acc = 0;
  if (j < n) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kTileRows)
      acc += double(g[r * n + j]) * ((double(x[r * n + j]) - stats[2 * r]) * stats[2 * r + 1]);
  }
  tile[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < n) {
    double s = 0;
    for (int k = 0; k < kTileRows; ++k) s += tile[k][threadIdx.x];
    partial[int64_t(blockIdx.y) * n + j] = s;
  }
}

template <class T>
__global__ void weight_grad_finish_kernel(const double* partial, T* out, int64_t chunks, int64_t n) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += int64_t(gridDim.x) * blockDim.x) {
    double s = 0;
    for (int64_t c = 0; c < chunks; ++c) s += partial[c * n + j];
    out[j] = T(s);
  }
}

// ---- rotary position embedding

// One thread per (row, i < h) pair of a dense x [rows, D]: (a, b) -> (a c - b s, b c + a s), s
// times `sign`; row r sits at position r % T.
template <class T>
__global__ void rotary_kernel(const T* x, const T* c, const T* s, T* y, int64_t rows, int64_t T_, int64_t h,
                              T sign) {
  const int64_t total = rows * h;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / h, i = e % h, t = r % T_;
    const T a = x[r * 2 * h + i], b = x[r * 2 * h + h + i], ci = c[t * h + i], si = sign * s[t * h + i];
    y[r * 2 * h + i] = a * ci - b * si;
    y[r * 2 * h + h + i] = b * ci + a * si;
  }
}

// ---- embedding

// out[i, :] = weight[idx[i] - first, :] where this table holds that row, zeros otherwise.
template <class T>
__global__ void embedding_kernel(const T* weight, const int64_t* idx, T* out, int64_t count, int64_t d,
                                 int64_t first, int64_t held, int64_t vocab) {
  const int64_t total = count * d;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / d, j = e % d;
    const int64_t index = idx[i], row = index - first;
    const bool valid = index >= 0 && index < vocab && row >= 0 && row < held;
    out[e] = valid ? weight[row * d + j] : T(0);
  }
}

// Sort keys for embedding_backward: the index itself, or `vocab` (sorted last, then skipped) for one
// outside [0, vocab); order[i] = i, so that the stable sort keeps each index's positions ascending.
__global__ void embedding_keys_kernel(const int64_t* idx, uint64_t* keys, int64_t* order, int64_t count,
                                      int64_t vocab) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t index = idx[i];
    keys[i] = uint64_t(index >= 0 && index < vocab ? index : vocab);
    order[i] = i;
  }
}

// After the sort: the thread of (k, j) where k starts a run of equal keys adds column j of the run's
// gradient rows, in ascending position, and writes the output row's element. The other threads of
// the run have nothing to do.
template <class T>
__global__ void embedding_backward_kernel(const uint64_t* keys, const int64_t* order, const T* grad, T* out,
                                          int64_t count, int64_t d, uint64_t vocab) {
  const int64_t total = count * d;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = e / d, j = e % d;
    const uint64_t key = keys[k];
    if (key >= vocab || (k > 0 && keys[k - 1] == key)) continue;
    T acc = T(0);
    for (int64_t m = k; m < count && keys[m] == key; ++m) acc += grad[order[m] * d + j];
    out[int64_t(key) * d + j] = acc;
  }
}

}  // namespace

Tensor softmax(const Tensor& a_in, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  const int64_t axis = dim < 0 ? dim + a_in.dim() : dim;
  GLOBE_CHECK(axis >= 0 && axis < a_in.dim(), "[", op, "] dim ", dim, " out of range for shape ",
              shape_str(a_in.shape()));
  const Tensor a = device_dense(a_in);
  Tensor out = Tensor::uninitialized(a.shape(), a.dtype(), a.device());
  const Shape& s = a.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= s[size_t(i)];
  for (int64_t i = axis + 1; i < a.dim(); ++i) inner *= s[size_t(i)];
  const int64_t n = s[size_t(axis)];
  if (a.numel() == 0) return out;
  const cudaStream_t stream = stream_of(a);
  visit_floating(a.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    if (inner == 1) {
      softmax_rows_kernel<T><<<row_grid(outer), kRowThreads, 0, stream>>>(in_ptr<T>(a), out_ptr<T>(out), outer, n, log);
    } else {
      softmax_columns_kernel<T>
          <<<flat_grid(outer * inner), kFlatThreads, 0, stream>>>(in_ptr<T>(a), out_ptr<T>(out), outer, n, inner, log);
    }
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), op);
  return out;
}

Tensor softmax_backward_last(const Tensor& y_in, const Tensor& g_in, double scale) {
  GLOBE_CHECK(y_in.dim() >= 1 && y_in.shape() == g_in.shape() && y_in.dtype() == g_in.dtype(),
              "[softmax_backward] expects y and g of one shape and dtype, got ", describe(y_in), " and ",
              describe(g_in));
  const Tensor y = device_dense(y_in), g = device_dense(g_in);
  Tensor out = Tensor::uninitialized(y.shape(), y.dtype(), y.device());
  const int64_t n = y.shape().back(), rows = rows_of(y);
  if (rows == 0) return out;
  const cudaStream_t stream = stream_of(y);
  visit_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_kernel<T>
        <<<row_grid(rows), kRowThreads, 0, stream>>>(in_ptr<T>(y), in_ptr<T>(g), out_ptr<T>(out), rows, n, T(scale));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "softmax_backward");
  return out;
}

Tensor causal_softmax_last(const Tensor& x_in, double scale, int64_t row0) {
  GLOBE_CHECK(x_in.dim() >= 2, "[causal_softmax] expects at least 2 dims, got ", describe(x_in));
  const Tensor x = device_dense(x_in);
  Tensor out = Tensor::uninitialized(x.shape(), x.dtype(), x.device());
  const int64_t n = x.shape().back(), per = x.shape()[size_t(x.dim() - 2)], rows = rows_of(x);
  if (rows == 0) return out;  // also covers per == 0
  const cudaStream_t stream = stream_of(x);
  visit_floating(x.dtype(), "causal_softmax", [&](auto tag) {
    using T = decltype(tag);
    causal_softmax_kernel<T>
        <<<row_grid(rows), kRowThreads, 0, stream>>>(in_ptr<T>(x), out_ptr<T>(out), rows, per, row0, n, T(scale));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "causal_softmax");
  return out;
}

namespace {

// The affine parameter `t` ([n] elements, x's dtype) dense on the device, or undefined.
Tensor affine_param(const Tensor& t, const Tensor& x, const char* what, const char* op) {
  if (!t.defined()) return t;
  GLOBE_CHECK(t.numel() == x.shape().back() && t.dtype() == x.dtype(), "[", op, "] ", what, " ", describe(t),
              " does not match the last dim of ", describe(x));
  return device_dense(t);
}

template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? in_ptr<T>(t) : nullptr;
}

}  // namespace

Tensor normalize_last(const Tensor& x_in, double eps, bool centered, const Tensor& weight_in, const Tensor& bias_in) {
  GLOBE_CHECK(x_in.dim() >= 1, "[layer_norm] expects at least 1 dim, got ", describe(x_in));
  const Tensor x = device_dense(x_in);
  const Tensor w = affine_param(weight_in, x, "weight", "layer_norm");
  const Tensor b = affine_param(bias_in, x, "bias", "layer_norm");
  Tensor out = Tensor::uninitialized(x.shape(), x.dtype(), x.device());
  const int64_t n = x.shape().back(), rows = rows_of(x);
  if (rows == 0) return out;
  const cudaStream_t stream = stream_of(x);
  visit_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    normalize_kernel<T><<<row_grid(rows), kRowThreads, 0, stream>>>(in_ptr<T>(x), ptr_or_null<T>(w),
                                                                    ptr_or_null<T>(b), out_ptr<T>(out), rows, n, eps,
                                                                    centered);
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "layer_norm");
  return out;
}

Tensor normalize_last_backward(const Tensor& g_in, const Tensor& x_in, double eps, bool centered,
                               const Tensor& weight_in) {
  GLOBE_CHECK(x_in.dim() >= 1 && g_in.shape() == x_in.shape() && g_in.dtype() == x_in.dtype(),
              "[layer_norm_backward] expects g and x of one shape and dtype, got ", describe(g_in), " and ",
              describe(x_in));
  const Tensor g = device_dense(g_in), x = device_dense(x_in);
  const Tensor w = affine_param(weight_in, x, "weight", "layer_norm_backward");
  Tensor out = Tensor::uninitialized(x.shape(), x.dtype(), x.device());
  const int64_t n = x.shape().back(), rows = rows_of(x);
  if (rows == 0) return out;
  const cudaStream_t stream = stream_of(x);
  visit_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    normalize_backward_kernel<T><<<row_grid(rows), kRowThreads, 0, stream>>>(
        in_ptr<T>(g), in_ptr<T>(x), ptr_or_null<T>(w), out_ptr<T>(out), rows, n, eps, centered);
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "layer_norm_backward");
  return out;
}

Tensor normalize_last_weight_grad(const Tensor& g_in, const Tensor& x_in, double eps, bool centered) {
  GLOBE_CHECK(x_in.dim() >= 1 && g_in.shape() == x_in.shape() && g_in.dtype() == x_in.dtype(),
              "[layer_norm_weight_grad] expects g and x of one shape and dtype, got ", describe(g_in), " and ",
              describe(x_in));
  const Tensor g = device_dense(g_in), x = device_dense(x_in);
  const int64_t n = x.shape().back(), rows = rows_of(x);
  const Device device = x.device();
  if (rows == 0) return Tensor::empty({n}, x.dtype(), device);  // a sum over no rows
  // Chunks of at least 64 rows, at most 256 of them, and a partial buffer of at most 4M doubles.
  const int64_t max_chunks = std::clamp<int64_t>((int64_t(1) << 22) / n, 1, 256);
  const int64_t chunk = std::max<int64_t>(64, (rows + max_chunks - 1) / max_chunks);
  const int64_t chunks = (rows + chunk - 1) / chunk;
  // Freed at return while the kernels may still be queued: the allocator orders reuse after them on
  // the compute stream.
  const Tensor stats = Tensor::uninitialized({rows, 2}, kFloat64, device);
  const Tensor partial = Tensor::uninitialized({chunks, n}, kFloat64, device);
  Tensor out = Tensor::uninitialized({n}, x.dtype(), device);
  const cudaStream_t stream = stream_of(x);
  visit_floating(x.dtype(), "layer_norm_weight_grad", [&](auto tag) {
    using T = decltype(tag);
    row_moments_kernel<T><<<row_grid(rows), kRowThreads, 0, stream>>>(in_ptr<T>(x), out_ptr<double>(stats), rows, n,
                                                                      eps, centered);
    GLOBE_CUDA_CHECK(cudaGetLastError(), "layer_norm_weight_grad");
    const dim3 grid(unsigned((n + kTileCols - 1) / kTileCols), unsigned(chunks));
    weight_grad_partial_kernel<T><<<grid, dim3(kTileCols, kTileRows), 0, stream>>>(
        in_ptr<T>(g), in_ptr<T>(x), in_ptr<double>(stats), out_ptr<double>(partial), rows, n, chunk);
    GLOBE_CUDA_CHECK(cudaGetLastError(), "layer_norm_weight_grad");
    weight_grad_finish_kernel<T>
        <<<flat_grid(n), kFlatThreads, 0, stream>>>(in_ptr<double>(partial), out_ptr<T>(out), chunks, n);
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "layer_norm_weight_grad");
  return out;
}

Tensor rotary(const Tensor& x_in, const Tensor& cos_in, const Tensor& sin_in, bool inverse) {
  GLOBE_CHECK(x_in.dim() >= 2 && x_in.shape().back() % 2 == 0, "[rotary_embedding] expects x [..., T, D] with D even, got ",
              describe(x_in));
  const Tensor x = device_dense(x_in), c = device_dense(cos_in), s = device_dense(sin_in);
  Tensor y = Tensor::uninitialized(x.shape(), x.dtype(), x.device());
  const int64_t h = x.shape().back() / 2, T_ = x.shape()[size_t(x.dim() - 2)], rows = rows_of(x);
  if (rows == 0 || h == 0) return y;
  const cudaStream_t stream = stream_of(x);
  visit_floating(x.dtype(), "rotary_embedding", [&](auto tag) {
    using T = decltype(tag);
    rotary_kernel<T><<<flat_grid(rows * h), kFlatThreads, 0, stream>>>(
        in_ptr<T>(x), in_ptr<T>(c), in_ptr<T>(s), out_ptr<T>(y), rows, T_, h, inverse ? T(-1) : T(1));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "rotary_embedding");
  return y;
}

// The CPU version throws on an index outside [0, vocab); here that would need the indices on the
// host (a wait for the device), so such an index gives a row of zeros instead, as an index another
// table holds does.
Tensor embedding(const Tensor& weight_in, const Tensor& indices_in, int64_t first, int64_t vocab) {
  GLOBE_CHECK(weight_in.dim() == 2, "[embedding] expects a 2-dim weight, got ", describe(weight_in));
  GLOBE_CHECK(indices_in.dtype() == kInt64, "[embedding] expects int64 indices, got ", describe(indices_in));
  const Tensor weight = device_dense(weight_in), indices = device_dense(indices_in);
  const int64_t held = weight.shape()[0], d = weight.shape()[1];
  if (vocab < 0) vocab = held;
  Shape out_shape = indices.shape();
  out_shape.push_back(d);
  Tensor out = Tensor::uninitialized(out_shape, weight.dtype(), weight.device());
  const int64_t count = indices.numel();
  if (count == 0 || d == 0) return out;
  const cudaStream_t stream = stream_of(weight);
  // Rows are copied, not computed: any dtype, as the CPU's memcpy.
  visit_dtype(weight.dtype(), [&](auto tag) {
    using T = decltype(tag);
    embedding_kernel<T><<<flat_grid(count * d), kFlatThreads, 0, stream>>>(
        in_ptr<T>(weight), in_ptr<int64_t>(indices), out_ptr<T>(out), count, d, first, held, vocab);
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "embedding");
  return out;
}

// Deterministic rather than atomicAdd: the (index, position) pairs are sorted by index with CUB's
// stable radix sort, then each index's gradient rows are added in ascending position, as the CPU's
// loop adds them, so the result is the same on every run and equals the CPU's bit for bit (float
// atomics would add in whatever order the threads arrive). An index outside [0, vocab), undefined
// behaviour on the CPU, is skipped.
Tensor embedding_backward(const Tensor& grad_in, const Tensor& indices_in, int64_t vocab) {
  GLOBE_CHECK(vocab >= 0, "[embedding_backward] vocab must be >= 0, got ", vocab);
  GLOBE_CHECK(indices_in.dtype() == kInt64, "[embedding_backward] expects int64 indices, got ",
              describe(indices_in));
  GLOBE_CHECK(grad_in.dim() >= 1, "[embedding_backward] expects a gradient of at least 1 dim, got ",
              describe(grad_in));
  const Tensor grad = device_dense(grad_in), indices = device_dense(indices_in);
  const int64_t d = grad.shape().back(), count = indices.numel();
  GLOBE_CHECK(grad.numel() == count * d, "[embedding_backward] gradient ", describe(grad),
              " does not match indices ", describe(indices));
  const Device device = grad.device();
  Tensor out = Tensor::empty({vocab, d}, grad.dtype(), device);
  if (count == 0 || d == 0 || vocab == 0) return out;
  const cudaStream_t stream = stream_of(grad);

  // Scratch (int64 tensors; the keys are read as uint64). Released at return, after which the
  // allocator hands the blocks out only to work queued later on the same stream.
  const Tensor keys = Tensor::uninitialized({count}, kInt64, device);
  const Tensor sorted_keys = Tensor::uninitialized({count}, kInt64, device);
  const Tensor order = Tensor::uninitialized({count}, kInt64, device);
  const Tensor sorted_order = Tensor::uninitialized({count}, kInt64, device);
  embedding_keys_kernel<<<flat_grid(count), kFlatThreads, 0, stream>>>(
      in_ptr<int64_t>(indices), out_ptr<uint64_t>(keys), out_ptr<int64_t>(order), count, vocab);
  GLOBE_CUDA_CHECK(cudaGetLastError(), "embedding_backward");

  // Keys lie in [0, vocab]: only their low bits need sorting.
  const int end_bit = std::max(1, int(std::bit_width(uint64_t(vocab))));
  size_t temp_bytes = 0;
  GLOBE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, in_ptr<uint64_t>(keys),
                                                   out_ptr<uint64_t>(sorted_keys), in_ptr<int64_t>(order),
                                                   out_ptr<int64_t>(sorted_order), count, 0, end_bit, stream),
                   "embedding_backward");
  const Tensor temp = Tensor::uninitialized({std::max<int64_t>(1, int64_t((temp_bytes + 7) / 8))}, kInt64, device);
  GLOBE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.device_data(), temp_bytes, in_ptr<uint64_t>(keys),
                                                   out_ptr<uint64_t>(sorted_keys), in_ptr<int64_t>(order),
                                                   out_ptr<int64_t>(sorted_order), count, 0, end_bit, stream),
                   "embedding_backward");

  visit_floating(grad.dtype(), "embedding_backward", [&](auto tag) {
    using T = decltype(tag);
    embedding_backward_kernel<T><<<flat_grid(count * d), kFlatThreads, 0, stream>>>(
        in_ptr<uint64_t>(sorted_keys), in_ptr<int64_t>(sorted_order), in_ptr<T>(grad), out_ptr<T>(out), count, d,
        uint64_t(vocab));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "embedding_backward");
  return out;
}

}  // namespace globe::kernels::cuda
