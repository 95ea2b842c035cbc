#include "globe/kernels/cpu/nn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "globe/kernels/cpu/elementwise.h"
#include "globe/kernels/cpu/fast_math.h"
#include "globe/kernels/cpu/softmax_rows.h"
#include "globe/kernels/cpu/vector_clones.h"

namespace globe::kernels {

namespace {

// Softmax (or log-softmax) of `rows` contiguous float rows of n: the exponentials in a vectorised
// loop (exp_nonpositive, as x - max <= 0), their sum in double. Returns
// false when a row is entirely -inf: the general loop then redoes every row (giving that row the
// NaNs torch gives).
GLOBE_VECTOR_CLONES bool softmax_rows_f32(const float* src, float* dst, int64_t rows, int64_t n, bool log) {
  for (int64_t o = 0; o < rows; ++o) {
    const float* __restrict x = src + o * n;
    float* __restrict y = dst + o * n;
    const float mx = lane_max(n, -INFINITY, [&](int64_t j) { return x[j]; });
    if (mx == -INFINITY) return false;
    for (int64_t j = 0; j < n; ++j) y[j] = exp_nonpositive(x[j] - mx);
    const double total = lane_sum(n, [&](int64_t j) { return double(y[j]); });
    if (log) {
      const float lse = mx + float(std::log(total));
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] - lse;
    } else {
      const float scale = float(1.0 / total);
      for (int64_t j = 0; j < n; ++j) y[j] *= scale;
    }
  }
  return true;
}

}  // namespace

GLOBE_VECTOR_CLONES void causal_softmax_rows_f32(const float* src, float* dst, int64_t rows, int64_t per,
                                                 int64_t row0, int64_t n, float scale) {
  causal_softmax_rows(src, dst, rows, per, row0, n, scale);
}

Tensor causal_softmax_last(const Tensor& x_in, double scale, int64_t row0) {
  const Tensor x = dense(x_in);
  Tensor out = Tensor::uninitialized(x.shape(), x.dtype());
  const int64_t n = x.shape().back(), per = x.shape()[size_t(x.dim() - 2)];
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  visit_floating(x.dtype(), "causal_softmax", [&](auto tag) {
    using T = decltype(tag);
    causal_softmax_rows_of(x.data<T>(), out.data<T>(), rows, per, row0, n, T(scale));
  });
  return out;
}

Tensor softmax(const Tensor& a_in, int64_t dim, bool log) {
  Tensor a = dense(a_in);
  Tensor out = Tensor::uninitialized(a.shape(), a.dtype());
  const Shape& s = a.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  for (int64_t i = dim + 1; i < a.dim(); ++i) inner *= s[i];
  const int64_t n = s[dim];
  visit_floating(a.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = decltype(tag);
    const T* src = a.data<T>();
    T* dst = out.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (inner == 1 && softmax_rows_f32(src, dst, outer, n, log)) return;
    }
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        const T* x = src + o * n * inner + in;
        T* y = dst + o * n * inner + in;
        T mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x[j * inner]);
        double total = 0;
        for (int64_t j = 0; j < n; ++j) total += std::exp(double(x[j * inner] - mx));
        if (log) {
          const T lse = mx + T(std::log(total));
          for (int64_t j = 0; j < n; ++j) y[j * inner] = x[j * inner] - lse;
        } else {
          const double scale = 1.0 / total;
          for (int64_t j = 0; j < n; ++j) y[j * inner] = T(std::exp(double(x[j * inner] - mx)) * scale);
        }
      }
    }
  });
  return out;
}

Tensor softmax_backward_last(const Tensor& y_in, const Tensor& g_in, double scale) {
  const Tensor y = dense(y_in), g = dense(g_in);
  Tensor out = Tensor::uninitialized(y.shape(), y.dtype());
  const int64_t n = y.shape().back(), rows = n == 0 ? 0 : y.numel() / n;
  visit_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* py = y.data<T>();
    const T* pg = g.data<T>();
    softmax_backward_rows(py, pg, out.data<T>(), rows, n, T(scale));
  });
  return out;
}

namespace {

// Mean and 1 / sqrt(var + eps) of one row, in double; uncentred (RMS norm), a mean of 0 and
// 1 / sqrt(mean(x^2) + eps).
template <class T>
inline __attribute__((always_inline)) std::pair<double, double> row_moments(const T* x, int64_t n, double eps,
                                                                           bool centered) {
  const double mean = centered ? lane_sum(n, [&](int64_t j) { return double(x[j]); }) / double(n) : 0.0;
  const double sq = lane_sum(n, [&](int64_t j) { return (double(x[j]) - mean) * (double(x[j]) - mean); });
  return {mean, 1.0 / std::sqrt(sq / double(n) + eps)};
}

// Layer norm over `rows` rows of n: o = xhat * w + b; its backward for x, with gw = g * w:
// o = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), xhat = (x - mean) * rstd; and the weight's
// gradient, acc[j] += g * xhat over the rows. Without an affine part w is ones and b zeros.
// Uncentred (RMS norm: xhat = x * rstd), the mean and mean(gw) terms are 0.
template <class T>
inline __attribute__((always_inline)) void normalize_rows(const T* __restrict x, const T* __restrict w,
                                                          const T* __restrict b, T* __restrict out, int64_t rows,
                                                          int64_t n, double eps, bool centered) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* o = out + r * n;
    const auto [mean, rstd] = row_moments(xr, n, eps, centered);
    const T m = T(mean), s = T(rstd);
    for (int64_t j = 0; j < n; ++j) o[j] = (xr[j] - m) * s * w[j] + b[j];
  }
}

template <class T>
inline __attribute__((always_inline)) void normalize_rows_backward(const T* __restrict g, const T* __restrict x,
                                                                   const T* __restrict w, T* __restrict out,
                                                                   int64_t rows, int64_t n, double eps,
                                                                   bool centered) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T* gr = g + r * n;
    T* o = out + r * n;
    const auto [mean, rstd] = row_moments(xr, n, eps, centered);
    const double sg = centered ? lane_sum(n, [&](int64_t j) { return double(gr[j]) * double(w[j]); }) : 0.0;
    const double sgx =
        lane_sum(n, [&](int64_t j) { return double(gr[j]) * double(w[j]) * (double(xr[j]) - mean) * rstd; });
    const T m = T(mean), s = T(rstd), mg = T(sg / double(n)), mgx = T(sgx / double(n));
    for (int64_t j = 0; j < n; ++j) o[j] = s * (gr[j] * w[j] - mg - (xr[j] - m) * s * mgx);
  }
}

template <class T>
inline __attribute__((always_inline)) void normalize_rows_weight_grad(const T* __restrict g, const T* __restrict x,
                                                                      double* __restrict acc, int64_t rows, int64_t n,
                                                                      double eps, bool centered) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T* gr = g + r * n;
    const auto [mean, rstd] = row_moments(xr, n, eps, centered);
    for (int64_t j = 0; j < n; ++j) acc[j] += double(gr[j]) * ((double(xr[j]) - mean) * rstd);
  }
}

// The float rows compiled for AVX2 too.
GLOBE_VECTOR_CLONES void normalize_rows_f32(const float* x, const float* w, const float* b, float* out, int64_t rows,
                                            int64_t n, double eps, bool centered) {
  normalize_rows(x, w, b, out, rows, n, eps, centered);
}
GLOBE_VECTOR_CLONES void normalize_rows_backward_f32(const float* g, const float* x, const float* w, float* out,
                                                     int64_t rows, int64_t n, double eps, bool centered) {
  normalize_rows_backward(g, x, w, out, rows, n, eps, centered);
}
GLOBE_VECTOR_CLONES void normalize_rows_weight_grad_f32(const float* g, const float* x, double* acc, int64_t rows,
                                                        int64_t n, double eps, bool centered) {
  normalize_rows_weight_grad(g, x, acc, rows, n, eps, centered);
}

// The affine parameter `t` ([n]) as a dense array, or `fill` n times when it is undefined.
template <class T>
std::vector<T> affine_or(const Tensor& t, int64_t n, T fill) {
  if (!t.defined()) return std::vector<T>(size_t(n), fill);
  const Tensor d = dense(t);
  return std::vector<T>(d.data<T>(), d.data<T>() + n);
}

}  // namespace

Tensor normalize_last(const Tensor& x_in, double eps, bool centered, const Tensor& weight, const Tensor& bias) {
  const Tensor x = dense(x_in);
  Tensor out = Tensor::uninitialized(x.shape(), x.dtype());
  const int64_t n = x.shape().back(), rows = n == 0 ? 0 : x.numel() / n;
  visit_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> w = affine_or(weight, n, T(1)), b = affine_or(bias, n, T(0));
    if constexpr (std::is_same_v<T, float>) {
      normalize_rows_f32(x.data<T>(), w.data(), b.data(), out.data<T>(), rows, n, eps, centered);
    } else {
      normalize_rows(x.data<T>(), w.data(), b.data(), out.data<T>(), rows, n, eps, centered);
    }
  });
  return out;
}

Tensor normalize_last_backward(const Tensor& g_in, const Tensor& x_in, double eps, bool centered, const Tensor& weight) {
  const Tensor g = dense(g_in), x = dense(x_in);
  Tensor out = Tensor::uninitialized(x.shape(), x.dtype());
  const int64_t n = x.shape().back(), rows = n == 0 ? 0 : x.numel() / n;
  visit_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> w = affine_or(weight, n, T(1));
    if constexpr (std::is_same_v<T, float>) {
      normalize_rows_backward_f32(g.data<T>(), x.data<T>(), w.data(), out.data<T>(), rows, n, eps, centered);
    } else {
      normalize_rows_backward(g.data<T>(), x.data<T>(), w.data(), out.data<T>(), rows, n, eps, centered);
    }
  });
  return out;
}

Tensor normalize_last_weight_grad(const Tensor& g_in, const Tensor& x_in, double eps, bool centered) {
  const Tensor g = dense(g_in), x = dense(x_in);
  const int64_t n = x.shape().back(), rows = n == 0 ? 0 : x.numel() / n;
  Tensor out = Tensor::uninitialized({n}, x.dtype());
  std::vector<double> acc(size_t(n), 0.0);
  visit_floating(x.dtype(), "layer_norm_weight_grad", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      normalize_rows_weight_grad_f32(g.data<T>(), x.data<T>(), acc.data(), rows, n, eps, centered);
    } else {
      normalize_rows_weight_grad(g.data<T>(), x.data<T>(), acc.data(), rows, n, eps, centered);
    }
    for (int64_t j = 0; j < n; ++j) out.data<T>()[j] = T(acc[size_t(j)]);
  });
  return out;
}

Tensor embedding(const Tensor& weight_in, const Tensor& indices_in, int64_t first, int64_t vocab) {
  Tensor weight = dense(weight_in), indices = dense(indices_in);
  const int64_t rows = weight.shape()[0], d = weight.shape()[1];
  if (vocab < 0) vocab = rows;
  Shape out_shape = indices.shape();
  out_shape.push_back(d);
  Tensor out = Tensor::empty(out_shape, weight.dtype());
  const int64_t* idx = indices.data<int64_t>();
  const size_t row_bytes = d * itemsize(weight.dtype());
  const char* src = static_cast<const char*>(weight.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t i = 0; i < indices.numel(); ++i) {
    GLOBE_CHECK(idx[i] >= 0 && idx[i] < vocab, "[embedding] index ", idx[i],
                " out of range for a weight of shape ", shape_str(weight.shape()), " (", vocab,
                " rows); indices ", shape_str(indices.shape()));
    const int64_t row = idx[i] - first;  // rows held elsewhere stay zero
    if (row >= 0 && row < rows) std::memcpy(dst + i * row_bytes, src + row * row_bytes, row_bytes);
  }
  return out;
}

Tensor embedding_backward(const Tensor& grad_in, const Tensor& indices_in, int64_t vocab) {
  Tensor grad = dense(grad_in), indices = dense(indices_in);
  const int64_t d = grad.shape().back();
  Tensor out = Tensor::empty({vocab, d}, grad.dtype());
  const int64_t* idx = indices.data<int64_t>();
  visit_floating(grad.dtype(), "embedding_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* g = grad.data<T>();
    T* w = out.data<T>();
    for (int64_t i = 0; i < indices.numel(); ++i)
      for (int64_t j = 0; j < d; ++j) w[idx[i] * d + j] += g[i * d + j];
  });
  return out;
}

Tensor causal_fill(const Tensor& x, double value, int64_t r0, int64_t c0) {
  const int64_t nd = x.dim();
  // One pass: each row's kept head copied, its tail filled.
  const Tensor xd = dense(x);
  Tensor out = Tensor::uninitialized(x.shape(), x.dtype());
  const int64_t rows = x.shape()[size_t(nd - 2)], cols = x.shape()[size_t(nd - 1)];
  const int64_t mats = rows * cols == 0 ? 0 : out.numel() / (rows * cols);
  visit_floating(x.dtype(), "causal_fill", [&](auto tag) {
    using T = decltype(tag);
    const T* src = xd.data<T>();
    T* dst = out.data<T>();
    for (int64_t r = 0; r < mats * rows; ++r) {
      const int64_t keep = std::clamp<int64_t>(r % rows + r0 - c0 + 1, 0, cols);
      std::copy(src + r * cols, src + r * cols + keep, dst + r * cols);
      std::fill(dst + r * cols + keep, dst + (r + 1) * cols, T(value));
    }
    return 0;
  });
  return out;
}

Tensor pick(const Tensor& x_in, const Tensor& index_in, int64_t c0, int64_t classes) {
  const Tensor x = dense(x_in), index = dense(index_in);
  const int64_t cols = x.shape().back();
  Tensor out = Tensor::empty(index.shape(), x.dtype());
  visit_floating(x.dtype(), "pick", [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const int64_t* ip = index.data<int64_t>();
    T* op = out.data<T>();
    for (int64_t r = 0; r < index.numel(); ++r) {
      GLOBE_CHECK(ip[r] >= 0 && ip[r] < classes, "[pick] index ", ip[r], " is out of range for ", classes, " classes");
      const int64_t j = ip[r] - c0;
      if (j >= 0 && j < cols) op[r] = xp[r * cols + j];
    }
    return 0;
  });
  return out;
}

Tensor pick_backward(const Tensor& grad, const Tensor& index_in, const Shape& out_shape, int64_t c0) {
  const Tensor g = dense(grad), index = dense(index_in);
  Tensor out = Tensor::empty(out_shape, g.dtype());
  const int64_t cols = out_shape.back();
  visit_floating(out.dtype(), "pick_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    const int64_t* ip = index.data<int64_t>();
    T* op = out.data<T>();
    for (int64_t r = 0; r < index.numel(); ++r) {
      const int64_t j = ip[r] - c0;
      if (j >= 0 && j < cols) op[r * cols + j] = gp[r];
    }
    return 0;
  });
  return out;
}

}  // namespace globe::kernels
