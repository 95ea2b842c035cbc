// Rotary position embedding on the CPU (kernels/cpu/nn.h): each row of x rotated pairwise by its
// position's angles, one pass, in x's own memory order.
#include <array>
#include <type_traits>

#include "globe/core/strided.h"
#include "globe/kernels/cpu/elementwise.h"
#include "globe/kernels/cpu/nn.h"
#include "globe/kernels/cpu/vector_clones.h"

namespace globe::kernels {

namespace {

// One row of D = 2h: (a, b) -> (a c - b s, b c + a s) elementwise over the halves, s negated for
// the inverse rotation (the backward).
template <class T>
[[gnu::always_inline]] inline void rotate_row(const T* __restrict x, const T* __restrict c, const T* __restrict s,
                                              T* __restrict y, int64_t h, T sign) {
  for (int64_t i = 0; i < h; ++i) {
    const T a = x[i], b = x[i + h], si = sign * s[i];
    y[i] = a * c[i] - b * si;
    y[i + h] = b * c[i] + a * si;
  }
}

GLOBE_VECTOR_CLONES void rotate_row_f32(const float* x, const float* c, const float* s, float* y, int64_t h,
                                        float sign) {
  rotate_row(x, c, s, y, h, sign);
}

}  // namespace

Tensor rotary(const Tensor& x_in, const Tensor& cos_in, const Tensor& sin_in, bool inverse) {
  // The last dim of x read with unit stride; the tables dense [T, h].
  const Tensor x = x_in.dim() > 0 && x_in.strides().back() == 1 ? x_in : dense(x_in);
  const Tensor c = dense(cos_in), s = dense(sin_in);
  Tensor y = uninitialized_in_order_of(x);
  const int64_t nd = x.dim(), D = x.shape().back(), h = D / 2;
  if (y.numel() == 0) return y;
  // Every row of x: operand 0 is x, 1 is y, 2 the tables' row (its position along dim nd - 2).
  const Shape rows(x.shape().begin(), x.shape().end() - 1);
  std::array<Shape, 3> strides = {Shape(x.strides().begin(), x.strides().end() - 1),
                                  Shape(y.strides().begin(), y.strides().end() - 1), Shape(size_t(nd - 1), 0)};
  strides[2].back() = h;
  visit_floating(x.dtype(), "rotary_embedding", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pc = c.data<T>();
    const T* ps = s.data<T>();
    T* py = y.data<T>();
    const T sign = inverse ? T(-1) : T(1);
    for_each_run<3>(rows, strides, {0, 0, 0}, [&](const StridedRun<3>& r) {
      for (int64_t i = 0; i < r.count; ++i) {
        const T* xr = px + r.offset[0] + i * r.stride[0];
        const T* cr = pc + r.offset[2] + i * r.stride[2];
        const T* sr = ps + r.offset[2] + i * r.stride[2];
        T* yr = py + r.offset[1] + i * r.stride[1];
        if constexpr (std::is_same_v<T, float>) {
          rotate_row_f32(xr, cr, sr, yr, h, sign);
        } else {
          rotate_row(xr, cr, sr, yr, h, sign);
        }
      }
    });
  });
  return y;
}

}  // namespace globe::kernels
