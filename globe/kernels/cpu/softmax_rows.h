// Row loops of the softmax family, shared by the softmax kernels and fused attention: inlined
// into their callers (so compiled for each caller's target, the AVX2 copy included).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "globe/kernels/cpu/fast_math.h"
#include "globe/kernels/cpu/vector_clones.h"

namespace globe::kernels {

// Causal softmax of `rows` contiguous rows of n, matrices of `per` rows whose first row is row
// `row0` of the logical one: row i keeps columns [0, i + row0 + 1) of x * scale (at least one),
// the rest are 0. The kept part is computed as softmax_rows_f32 computes a row whose masked
// entries are -inf, so the two give the same bits.
template <class T>
inline __attribute__((always_inline)) void causal_softmax_rows(const T* __restrict src, T* __restrict dst,
                                                               int64_t rows, int64_t per, int64_t row0, int64_t n,
                                                               T scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* x = src + r * n;
    T* y = dst + r * n;
    const int64_t keep = std::min<int64_t>(n, r % per + row0 + 1);
    // x * scale rounded and stored first: fused into the subtraction below (an FMA) it would
    // differ in the last bit from scaling, masking and softmax as three ops.
    for (int64_t j = 0; j < keep; ++j) y[j] = x[j] * scale;
    const T mx = lane_max(keep, T(-INFINITY), [&](int64_t j) { return y[j]; });
    for (int64_t j = 0; j < keep; ++j) {
      if constexpr (std::is_same_v<T, float>) {
        y[j] = exp_nonpositive(y[j] - mx);
      } else {
        y[j] = std::exp(y[j] - mx);
      }
    }
    for (int64_t j = keep; j < n; ++j) y[j] = T(0);
    const T inv = T(1.0 / lane_sum(n, [&](int64_t j) { return double(y[j]); }));  // the zeros too: same order
    for (int64_t j = 0; j < keep; ++j) y[j] *= inv;
  }
}

// Softmax's backward over `rows` rows of n from its output y: out = scale * y * (g - sum(g * y))
// (scale: the factor the softmax's input was multiplied by).
template <class T>
inline __attribute__((always_inline)) void softmax_backward_rows(const T* __restrict y, const T* __restrict g,
                                                                 T* __restrict out, int64_t rows, int64_t n,
                                                                 T scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * n;
    const T* gr = g + r * n;
    T* o = out + r * n;
    const T d = T(lane_sum(n, [&](int64_t j) { return double(gr[j]) * double(yr[j]); }));
    if (scale == T(1)) {
      for (int64_t j = 0; j < n; ++j) o[j] = yr[j] * (gr[j] - d);
    } else {
      for (int64_t j = 0; j < n; ++j) o[j] = scale * (yr[j] * (gr[j] - d));
    }
  }
}

// causal_softmax_rows on float, vectorised (defined in nn.cpp).
void causal_softmax_rows_f32(const float* src, float* dst, int64_t rows, int64_t per, int64_t row0, int64_t n,
                             float scale);

// causal_softmax_rows for any floating T, through the vectorised copy on float.
template <class T>
void causal_softmax_rows_of(const T* src, T* dst, int64_t rows, int64_t per, int64_t row0, int64_t n, T scale) {
  if constexpr (std::is_same_v<T, float>) {
    causal_softmax_rows_f32(src, dst, rows, per, row0, n, scale);
  } else {
    causal_softmax_rows(src, dst, rows, per, row0, n, scale);
  }
}

}  // namespace globe::kernels
