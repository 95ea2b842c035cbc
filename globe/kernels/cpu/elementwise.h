// Elementwise kernel templates over strided local tensors. Outputs are new contiguous tensors.
#pragma once

#include "globe/core/strided.h"
#include "globe/core/tensor.h"
#include "globe/kernels/host_arrays.h"
#include "globe/kernels/strides.h"

namespace globe::kernels {

// out = f(a), out dtype TOut.
template <class TIn, class TOut, class F>
Tensor map_unary(const Tensor& a, F f) {
  Tensor out = Tensor::uninitialized(a.shape(), dtype_of<TOut>());
  const TIn* src = static_cast<const TIn*>(a.storage()->data);
  TOut* dst = out.data<TOut>();
  if (a.is_contiguous()) {
    // Unaliased pointers: the compiler vectorises without a run-time overlap check, which it
    // skips for costly bodies (GELU's) and then runs scalar.
    const TIn* __restrict x = src + a.offset();
    TOut* __restrict o = dst;
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
    return out;
  }
  for_each_run<1>(a.shape(), {a.strides()}, {a.offset()}, [&](const StridedRun<1>& r) {
    const TIn* s = src + r.offset[0];
    for (int64_t i = 0; i < r.count; ++i) *dst++ = f(s[i * r.stride[0]]);
  });
  return out;
}

// out = f(a, b) with a and b (of type T) broadcast to `shape`; out of type TOut.
template <class T, class TOut = T, class F>
Tensor map_binary(const Tensor& a, const Tensor& b, const Shape& shape, F f) {
  Tensor out = Tensor::uninitialized(shape, dtype_of<TOut>());
  const T* pa = static_cast<const T*>(a.storage()->data);
  const T* pb = static_cast<const T*>(b.storage()->data);
  TOut* dst = out.data<TOut>();
  if (a.is_contiguous() && b.is_contiguous() && a.shape() == shape && b.shape() == shape) {
    // The common case as one flat loop over unaliased pointers, which the compiler vectorises.
    const T* __restrict x = pa + a.offset();
    const T* __restrict y = pb + b.offset();
    TOut* __restrict o = dst;
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    return out;
  }
  for_each_run<2>(shape, {broadcast_strides(a, shape), broadcast_strides(b, shape)},
                  {a.offset(), b.offset()}, [&](const StridedRun<2>& r) {
                    const T* x = pa + r.offset[0];
                    const T* y = pb + r.offset[1];
                    if (r.stride[0] == 1 && r.stride[1] == 1) {
                      for (int64_t i = 0; i < r.count; ++i) dst[i] = f(x[i], y[i]);
                    } else if (r.stride[0] == 1 && r.stride[1] == 0) {
                      const T yv = *y;
                      for (int64_t i = 0; i < r.count; ++i) dst[i] = f(x[i], yv);
                    } else {
                      for (int64_t i = 0; i < r.count; ++i)
                        dst[i] = f(x[i * r.stride[0]], y[i * r.stride[1]]);
                    }
                    dst += r.count;
                  });
  return out;
}

// `t` itself when contiguous, else a contiguous copy (no autograd: kernels only).
Tensor dense(const Tensor& t);
// A new tensor shaped like `like` whose memory follows like's dim order (largest stride outermost,
// ties in dim order; the last dim innermost), as PyTorch's preserve_format.
Tensor uninitialized_in_order_of(const Tensor& like);

// exp, GELU's tanh form and SiLU on float32, as plain loops over unaliased arrays (vectorised; the
// generic map_unary / map_binary path leaves these bodies scalar, std::exp a call per element):
// y = e^x (fast_math.h's exp_full), y = gelu(x), out = g * gelu'(x), y = silu(x), out = g * silu'(x).
void exp_f32(const float* x, float* y, int64_t n);
void gelu_tanh_f32(const float* x, float* y, int64_t n);
void gelu_tanh_grad_f32(const float* g, const float* x, float* out, int64_t n);
void silu_f32(const float* x, float* y, int64_t n);
void silu_grad_f32(const float* g, const float* x, float* out, int64_t n);
// y = silu(a) * b; and swiglu's backward, d_gate = g * b * silu'(a), d_up = g * silu(a).
void swiglu_f32(const float* a, const float* b, float* y, int64_t n);
void swiglu_backward_f32(const float* g, const float* a, const float* b, float* d_gate, float* d_up, int64_t n);

// Copies `src` (any strides, any dtype) into `dst` (same shape, any strides), converting types.
void copy_into(const Tensor& dst, const Tensor& src);

}  // namespace globe::kernels
