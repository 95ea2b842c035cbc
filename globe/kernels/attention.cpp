#include "globe/kernels/attention.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "globe/kernels/blas.h"
#include "globe/kernels/elementwise.h"
#include "globe/kernels/softmax_rows.h"
#include "globe/kernels/vector_clones.h"

namespace globe::kernels {

namespace {

GLOBE_VECTOR_CLONES void softmax_backward_rows_f32(const float* y, const float* g, float* out, int64_t rows,
                                                   int64_t n, float scale) {
  softmax_backward_rows(y, g, out, rows, n, scale);
}

template <class T>
void causal_softmax_matrix(const T* s, T* p, int64_t n, T scale) {  // [n, n] -> [n, n]
  if constexpr (std::is_same_v<T, float>) {
    causal_softmax_rows_f32(s, p, n, n, 0, n, scale);
  } else {
    causal_softmax_rows(s, p, n, n, 0, n, scale);
  }
}

template <class T>
void softmax_backward_matrix(const T* p, const T* dp, T* ds, int64_t n, T scale) {  // [n, n] each
  if constexpr (std::is_same_v<T, float>) {
    softmax_backward_rows_f32(p, dp, ds, n, n, scale);
  } else {
    softmax_backward_rows(p, dp, ds, n, n, scale);
  }
}

// `t` if BLAS can read its trailing [rows, cols] blocks as they are (unit stride along the last dim),
// else a contiguous copy.
Tensor blas_ready(const Tensor& t) {
  const int64_t nd = t.dim(), rows = t.shape()[nd - 2], cols = t.shape()[nd - 1];
  const bool unit = cols <= 1 || t.strides()[nd - 1] == 1;
  const bool rows_apart = rows <= 1 || t.strides()[nd - 2] >= std::max<int64_t>(cols, 1);
  return unit && rows_apart ? t : dense(t);
}

// The leading dim BLAS gets for t's trailing blocks (any value >= cols where there is one row).
int64_t leading_dim(const Tensor& t) {
  const int64_t nd = t.dim();
  return t.shape()[nd - 2] <= 1 ? std::max<int64_t>(t.shape()[nd - 1], 1) : t.strides()[nd - 2];
}

// A new tensor shaped like `like` whose memory follows like's dim order (largest stride outermost,
// ties in dim order; the last dim innermost), as PyTorch's preserve_format.
Tensor uninitialized_in_order_of(const Tensor& like) {
  const int64_t nd = like.dim();
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

// Element offset of batch entry e (row-major over `batch`) in a tensor whose batch dims start at
// `first` of its strides.
int64_t batch_offset(int64_t e, const Shape& batch, const Shape& strides, size_t first) {
  int64_t off = 0;
  for (size_t i = batch.size(); i-- > 0;) {
    off += (e % batch[i]) * strides[first + i];
    e /= batch[i];
  }
  return off;
}

struct Layout {  // the packed input as BLAS reads it
  Tensor qkv;
  Shape batch;      // the dims between the 3 and [T, D]
  int64_t n, d;     // T, D
  int64_t ld, kv;   // q's row stride; the distance from q to k (and k to v)
  int64_t entries;  // batch entries
};

Layout layout_of(const Tensor& qkv_in) {
  Layout l;
  l.qkv = blas_ready(qkv_in);
  const int64_t nd = l.qkv.dim();
  l.batch = Shape(l.qkv.shape().begin() + 1, l.qkv.shape().end() - 2);
  l.n = l.qkv.shape()[size_t(nd - 2)];
  l.d = l.qkv.shape()[size_t(nd - 1)];
  l.ld = leading_dim(l.qkv);
  l.kv = l.qkv.strides()[0];
  l.entries = numel_of(l.batch);
  return l;
}

}  // namespace

Tensor causal_attention(const Tensor& qkv_in, double scale, Tensor* probs) {
  const Layout l = layout_of(qkv_in);
  const Tensor q_view = Tensor::view_of(l.qkv, Shape(l.qkv.shape().begin() + 1, l.qkv.shape().end()),
                                        Shape(l.qkv.strides().begin() + 1, l.qkv.strides().end()), l.qkv.offset());
  Tensor y = uninitialized_in_order_of(q_view);
  Shape p_shape = l.batch;
  p_shape.insert(p_shape.end(), {l.n, l.n});
  if (probs) *probs = Tensor::uninitialized(p_shape, l.qkv.dtype());
  if (y.numel() == 0) return y;
  visit_floating(l.qkv.dtype(), "causal_attention", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = l.n, nn = n * n, ldy = leading_dim(y);
    std::vector<T> scores(static_cast<size_t>(nn)), own(probs ? 0 : static_cast<size_t>(nn));
    const T* base = l.qkv.data<T>();
    for (int64_t e = 0; e < l.entries; ++e) {
      const T* q = base + batch_offset(e, l.batch, l.qkv.strides(), 1);
      T* p = probs ? probs->data<T>() + e * nn : own.data();
      T* out = y.data<T>() + batch_offset(e, l.batch, y.strides(), 0);
      gemm<T>(CblasNoTrans, CblasTrans, n, n, l.d, q, l.ld, q + l.kv, l.ld, scores.data(), n);  // q k^T [T, T]
      causal_softmax_matrix<T>(scores.data(), p, n, T(scale));
      gemm<T>(CblasNoTrans, CblasNoTrans, n, l.d, n, p, n, q + 2 * l.kv, l.ld, out, ldy);  // P v [T, D]
    }
  });
  return y;
}

Tensor causal_attention_backward(const Tensor& qkv_in, const Tensor& gy_in, double scale, const Tensor& probs) {
  const Layout l = layout_of(qkv_in);
  const Tensor gy = blas_ready(gy_in);
  Tensor dqkv = uninitialized_in_order_of(l.qkv);
  if (dqkv.numel() == 0) return dqkv;
  visit_floating(l.qkv.dtype(), "causal_attention_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = l.n, d = l.d, nn = n * n, ldg = leading_dim(gy), ldd = leading_dim(dqkv);
    const int64_t dkv = dqkv.strides()[0];
    std::vector<T> own(probs.defined() ? 0 : static_cast<size_t>(nn)), dp(static_cast<size_t>(nn)),
        ds(static_cast<size_t>(nn));
    const T* base = l.qkv.data<T>();
    for (int64_t e = 0; e < l.entries; ++e) {
      const T* q = base + batch_offset(e, l.batch, l.qkv.strides(), 1);
      const T* k = q + l.kv;
      const T* v = k + l.kv;
      const T* g = gy.data<T>() + batch_offset(e, l.batch, gy.strides(), 0);
      T* dq = dqkv.data<T>() + batch_offset(e, l.batch, dqkv.strides(), 1);
      const T* p = probs.defined() ? probs.data<T>() + e * nn : own.data();
      if (!probs.defined()) {  // the forward's P again, the same way
        gemm<T>(CblasNoTrans, CblasTrans, n, n, d, q, l.ld, k, l.ld, dp.data(), n);
        causal_softmax_matrix<T>(dp.data(), own.data(), n, T(scale));
      }
      gemm<T>(CblasNoTrans, CblasTrans, n, n, d, g, ldg, v, l.ld, dp.data(), n);  // dP = gy v^T [T, T]
      softmax_backward_matrix<T>(p, dp.data(), ds.data(), n, T(scale));         // dS (scale included)
      gemm<T>(CblasTrans, CblasNoTrans, n, d, n, p, n, g, ldg, dq + 2 * dkv, ldd);        // dV = P^T gy
      gemm<T>(CblasNoTrans, CblasNoTrans, n, d, n, ds.data(), n, k, l.ld, dq, ldd);       // dQ = dS k
      gemm<T>(CblasTrans, CblasNoTrans, n, d, n, ds.data(), n, q, l.ld, dq + dkv, ldd);   // dK = dS^T q
    }
  });
  return dqkv;
}

}  // namespace globe::kernels
