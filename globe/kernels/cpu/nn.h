// Kernels behind the neural-network functions.
#pragma once

#include "globe/core/tensor.h"

namespace globe::kernels {

// Softmax (or log-softmax) along `dim`, numerically stable (max subtracted).
Tensor softmax(const Tensor& a, int64_t dim, bool log);
// Softmax's backward along the last dim from its output y: scale * y * (g - sum(g * y)), one pass
// per row (scale: the factor the softmax's input was multiplied by, as in causal_softmax_last).
Tensor softmax_backward_last(const Tensor& y, const Tensor& g, double scale = 1.0);
// Softmax over the last dim of x * scale with the future masked: x [..., rows, n] holds rows
// row0, row0 + 1, ... of the logical matrices, and row i keeps columns 0..i (as causal_fill with
// -inf, then softmax). One pass per row; masked entries are 0.
Tensor causal_softmax_last(const Tensor& x, double scale, int64_t row0 = 0);
// Layer norm over the last dim, in one pass per row: xhat = (x - mean) / sqrt(var + eps) (biased
// variance, sums in double), then * weight and + bias ([n] each) where they are defined. Not
// `centered`, RMS norm: xhat = x / sqrt(mean(x^2) + eps).
Tensor normalize_last(const Tensor& x, double eps, bool centered, const Tensor& weight = Tensor(),
                      const Tensor& bias = Tensor());
// Its backward for x, with gw = g * weight (g where weight is undefined):
// rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), mean and rstd recomputed from x (not centred:
// the mean and mean(gw) terms are 0).
Tensor normalize_last_backward(const Tensor& g, const Tensor& x, double eps, bool centered,
                               const Tensor& weight = Tensor());
// The weight's gradient: g * xhat summed over the rows -> [n].
Tensor normalize_last_weight_grad(const Tensor& g, const Tensor& x, double eps, bool centered);
// Rotary position embedding: x [..., T, D] (D even, h = D / 2), cos and sin [T, h]; each row t
// of x as halves (a, b) becomes (a cos_t - b sin_t, b cos_t + a sin_t), sin negated where
// `inverse` (the rotation back: the backward). The result keeps x's memory order.
Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse);
// weight [V, D], indices [...] -> [..., D]. A table holding only rows [first, first + rows) of a
// `vocab`-row table returns zeros for indices it does not hold (vocab-parallel embedding).
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t first = 0, int64_t vocab = -1);
// grad [..., D], indices [...] -> [V, D] with rows summed per index.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t vocab);

// x [..., rows, cols] whose block starts at row r0 and column c0 of the logical matrices: element
// (i, j) kept where j + c0 <= i + r0, else `value` (causal_fill). A new contiguous tensor.
Tensor causal_fill(const Tensor& x, double value, int64_t r0, int64_t c0);
// x [..., cols] holding columns [c0, c0 + cols) of `classes`, index [...] (int64) -> out[...] =
// x[..., index - c0] where this block holds that column, else 0. Indices outside [0, classes) are an
// error naming the index.
Tensor pick(const Tensor& x, const Tensor& index, int64_t c0, int64_t classes);
// Its backward: grad [...], index [...] -> out_shape [..., cols], grad at each row's index (columns
// [c0, c0 + cols) held here), zeros elsewhere.
Tensor pick_backward(const Tensor& grad, const Tensor& index, const Shape& out_shape, int64_t c0);

}  // namespace globe::kernels
