#include "globe/kernels/cpu/elementwise.h"
#include "globe/kernels/cpu/fast_math.h"
#include "globe/kernels/cpu/tiled_transpose.h"
#include "globe/kernels/cpu/vector_clones.h"

#include <algorithm>
#include <numeric>
#include <cstring>

namespace globe::kernels {

Tensor dense(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::uninitialized(t.shape(), t.dtype());
  copy_into(out, t);
  return out;
}

Tensor uninitialized_in_order_of(const Tensor& like) {
  const int64_t nd = like.dim();
  if (nd == 0) return Tensor::uninitialized(like.shape(), like.dtype());
  std::vector<int64_t> order(static_cast<size_t>(nd - 1));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return like.strides()[a] > like.strides()[b]; });
  order.push_back(nd - 1);
  Shape strides(static_cast<size_t>(nd));
  int64_t step = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[size_t(order[i])] = step;
    step *= like.shape()[size_t(order[i])];
  }
  const Tensor memory = Tensor::uninitialized({like.numel()}, like.dtype());
  return Tensor::view_of(memory, like.shape(), strides, 0);
}

namespace {

// True when the last two dims are swapped between dst and src: dst walks its last dim densely while
// src walks its second-to-last dim densely (e.g. contiguous(transpose(w, 0, 1))). Such copies read
// src with a large stride on every element, which the generic run loop does one cache miss at a time.
bool is_transposing_copy(const Tensor& dst, const Tensor& src) {
  const int64_t nd = dst.dim();
  if (nd < 2) return false;
  const Shape &sh = dst.shape(), &ds = dst.strides(), &ss = src.strides();
  return sh[nd - 1] >= kTransposeTile && sh[nd - 2] >= kTransposeTile && ds[nd - 1] == 1 && ss[nd - 2] == 1 && ss[nd - 1] != 1;
}

template <class D, class S>
void copy_transposed(const Tensor& dst, const Tensor& src, D* pd, const S* ps) {
  const int64_t nd = dst.dim();
  const Shape& sh = dst.shape();
  const int64_t rows = sh[nd - 2], cols = sh[nd - 1];
  const int64_t drs = dst.strides()[nd - 2], scs = src.strides()[nd - 1];  // dst row / src col strides
  auto block = [&](D* d, const S* s) { copy_tiled(d, drs, s, 1, scs, rows, cols); };
  const Shape batch(sh.begin(), sh.end() - 2);
  const Shape db(dst.strides().begin(), dst.strides().end() - 2), sb(src.strides().begin(), src.strides().end() - 2);
  for_each_run<2>(batch, {db, sb}, {dst.offset(), src.offset()}, [&](const StridedRun<2>& r) {
    for (int64_t k = 0; k < r.count; ++k) block(pd + r.offset[0] + k * r.stride[0], ps + r.offset[1] + k * r.stride[1]);
  });
}

// Dense runs between float and the 16-bit floats, the conversions mixed precision spends its time
// in. The x86-64-v3 clones (F16C) convert float16 with vcvtph2ps / vcvtps2ph through the
// compiler's _Float16 (IEEE round to nearest even, as Float16Codec; tests/core checks they agree);
// bfloat16's shifts vectorise as they are.
#if defined(__FLT16_MAX__)
using Half = _Float16;
#endif

GLOBE_VECTOR_CLONES void widen_run(const float16* __restrict s, float* __restrict d, int64_t n) {
#if defined(__FLT16_MAX__)
  const Half* h = reinterpret_cast<const Half*>(s);
  for (int64_t i = 0; i < n; ++i) d[i] = float(h[i]);
#else
  for (int64_t i = 0; i < n; ++i) d[i] = float(s[i]);
#endif
}
GLOBE_VECTOR_CLONES void narrow_run(const float* __restrict s, float16* __restrict d, int64_t n) {
#if defined(__FLT16_MAX__)
  Half* h = reinterpret_cast<Half*>(d);
  for (int64_t i = 0; i < n; ++i) h[i] = Half(s[i]);
#else
  for (int64_t i = 0; i < n; ++i) d[i] = float16(s[i]);
#endif
}
GLOBE_VECTOR_CLONES void widen_run(const bfloat16* __restrict s, float* __restrict d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = float(s[i]);
}
GLOBE_VECTOR_CLONES void narrow_run(const float* __restrict s, bfloat16* __restrict d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = bfloat16(s[i]);
}

// d[i] = s[i] over a dense run, converting.
template <class D, class S>
void convert_run(const S* s, D* d, int64_t n) {
  if constexpr (std::is_same_v<D, S>) std::memmove(d, s, size_t(n) * sizeof(D));  // libc's widest moves
  else if constexpr (std::is_same_v<D, float> && is_reduced_float_v<S>) widen_run(s, d, n);
  else if constexpr (std::is_same_v<S, float> && is_reduced_float_v<D>) narrow_run(s, d, n);
  else
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  GLOBE_CHECK(dst.shape() == src.shape(), "[copy] shape ", shape_str(src.shape()), " into ",
              shape_str(dst.shape()));
  // One dtype, both dense: the bytes as they lie (a 4-byte copy took ~1,100 instructions through
  // the strided runs below, most of them copying the two stride vectors).
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    const size_t item = itemsize(dst.dtype());
    if (dst.numel() > 0)  // an empty tensor may hold no storage at all
      std::memmove(static_cast<char*>(dst.storage()->data) + size_t(dst.offset()) * item,
                   static_cast<const char*>(src.storage()->data) + size_t(src.offset()) * item,
                   size_t(dst.numel()) * item);
    return;
  }
  visit_stored(dst.dtype(), [&](auto dtag) {
    using D = decltype(dtag);
    visit_stored(src.dtype(), [&](auto stag) {
      using S = decltype(stag);
      D* pd = static_cast<D*>(dst.storage()->data);
      const S* ps = static_cast<const S*>(src.storage()->data);
      if (is_transposing_copy(dst, src)) {
        copy_transposed<D, S>(dst, src, pd, ps);
        return;
      }
      for_each_run<2>(dst.shape(), {dst.strides(), src.strides()}, {dst.offset(), src.offset()},
                      [&](const StridedRun<2>& r) {
                        D* d = pd + r.offset[0];
                        const S* s = ps + r.offset[1];
                        // The common runs as loops the compiler vectorises: dense, and a value
                        // repeated (a broadcast source, such as a bias filling a GEMM's output).
                        if (r.stride[0] == 1 && r.stride[1] == 1) {
                          convert_run(s, d, r.count);
                        } else if (r.stride[0] == 1 && r.stride[1] == 0) {
                          std::fill(d, d + r.count, static_cast<D>(*s));
                        } else {
                          for (int64_t i = 0; i < r.count; ++i)
                            d[i * r.stride[0]] = static_cast<D>(s[i * r.stride[1]]);
                        }
                      });
    });
  });
}

GLOBE_VECTOR_CLONES void exp_f32(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_full(x[i]);
}

GLOBE_VECTOR_CLONES void gelu_tanh_f32(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gelu_tanh_value(x[i]);
}

GLOBE_VECTOR_CLONES void gelu_tanh_grad_f32(const float* __restrict g, const float* __restrict x, float* __restrict out,
                                            int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] * gelu_tanh_slope(x[i]);
}

GLOBE_VECTOR_CLONES void silu_f32(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = silu_value(x[i]);
}

GLOBE_VECTOR_CLONES void silu_grad_f32(const float* __restrict g, const float* __restrict x, float* __restrict out,
                                       int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] * silu_slope(x[i]);
}

GLOBE_VECTOR_CLONES void swiglu_f32(const float* __restrict a, const float* __restrict b, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = silu_value(a[i]) * b[i];
}

GLOBE_VECTOR_CLONES void swiglu_backward_f32(const float* __restrict g, const float* __restrict a,
                                             const float* __restrict b, float* __restrict d_gate,
                                             float* __restrict d_up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float s = 1.0f / (1.0f + silu_gate_exp(a[i]));
    d_up[i] = g[i] * (a[i] * s);
    d_gate[i] = g[i] * b[i] * (s * (1.0f + a[i] * (1.0f - s)));
  }
}

namespace {

// d[i] = x[i] + y[i] over a 16-bit float type, each sum taken in float32 and rounded once.
template <class T>
void add_reduced(T* d, const T* x, const T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = T(float(x[i]) + float(y[i]));
}

}  // namespace

void add_arrays(DType dtype, void* out, const void* a, const void* b, int64_t n) {
  if (is_reduced_precision(dtype)) {
    return visit_stored(dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_reduced_float_v<T>) add_reduced(static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), n);
    });
  }
  visit_summable(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* __restrict d = static_cast<T*>(out);
    const T* __restrict x = static_cast<const T*>(a);
    const T* __restrict y = static_cast<const T*>(b);
    for (int64_t i = 0; i < n; ++i) d[i] = x[i] + y[i];
  });
}

void accumulate_array(DType dtype, void* acc, const void* x, int64_t n) {
  if (is_reduced_precision(dtype)) return add_arrays(dtype, acc, acc, x, n);
  visit_summable(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* __restrict d = static_cast<T*>(acc);
    const T* __restrict s = static_cast<const T*>(x);
    for (int64_t i = 0; i < n; ++i) d[i] += s[i];
  });
}

}  // namespace globe::kernels
