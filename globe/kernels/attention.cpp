#include "globe/kernels/attention.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "globe/kernels/blas.h"
#include "globe/kernels/elementwise.h"
#include "globe/kernels/softmax_rows.h"
#include "globe/kernels/vector_clones.h"

namespace globe::kernels {

namespace {

// 8 floats (an AVX2 register; two SSE ones in the baseline copy) and 8 lane indices.
using v8 = float __attribute__((vector_size(32)));
using v8i = int32_t __attribute__((vector_size(32)));

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

// Which part of a product attention's causal mask makes zero or unneeded, so that it is skipped:
// c's entries above the diagonal (j > i: the scores), or, for row i of c, the terms with k > i
// (a = P or dS: P v, dS k) or k < i (a = P^T or dS^T: P^T gy, dS^T q).
enum class Skip { nothing, above_diagonal, k_after_row, k_before_row };

// MR rows x 16 columns of c = A B over terms [k0, k1): A(r, k) = a[r * a_rs + k * a_cs], B packed
// row-major with mp floats a row; the block's 2 MR sums stay in registers (AVX2: 12 of the 16 for
// MR = 6). Writes the first nr columns.
template <int64_t MR>
[[gnu::always_inline]] inline void product_block_f32(const float* a, int64_t a_rs, int64_t a_cs, const float* bp,
                                                     int64_t mp, int64_t k0, int64_t k1, float* c, int64_t ldc,
                                                     int64_t nr) {
  v8 lo[MR], hi[MR];
  for (int64_t r = 0; r < MR; ++r) lo[r] = hi[r] = v8{};  // (as `= {}`, GCC zeroed them in memory first)
  const float* ak = a + k0 * a_cs;
  const float* bk = bp + k0 * mp;
  for (int64_t kk = k0; kk < k1; ++kk, ak += a_cs, bk += mp) {
    v8 b0, b1;
    std::memcpy(&b0, bk, sizeof b0);
    std::memcpy(&b1, bk + 8, sizeof b1);
    for (int64_t r = 0; r < MR; ++r) {
      const float av = ak[r * a_rs];
      lo[r] += av * b0;
      hi[r] += av * b1;
    }
  }
  for (int64_t r = 0; r < MR; ++r) {
    if (nr == 16) {
      std::memcpy(c + r * ldc, &lo[r], sizeof lo[r]);
      std::memcpy(c + r * ldc + 8, &hi[r], sizeof hi[r]);
    } else {
      float row[16];
      std::memcpy(row, &lo[r], sizeof lo[r]);
      std::memcpy(row + 8, &hi[r], sizeof hi[r]);
      for (int64_t j = 0; j < nr; ++j) c[r * ldc + j] = row[j];
    }
  }
}

// c [n, m] (leading dim ldc) = A B over k, A(i, k) = a[i * a_rs + k * a_cs], B packed row-major
// [k, mp] (mp a multiple of 16, zeros past m), in blocks of 6 (then 4, 2, 1) rows x 16 columns,
// the blocks and terms the mask zeroes skipped. For the small matrices of one head (T and D up to
// a few hundred) this beats a BLAS call, whose packing and setup dominate there.
GLOBE_VECTOR_CLONES void small_product_f32(const float* a, int64_t a_rs, int64_t a_cs, const float* bp, int64_t mp,
                                           int64_t n, int64_t m, int64_t k, float* c, int64_t ldc, Skip skip) {
  for (int64_t i0 = 0; i0 < n;) {
    const int64_t left = n - i0, mr = left >= 6 ? 6 : left >= 4 ? 4 : left >= 2 ? 2 : 1, last = i0 + mr - 1;
    const int64_t k0 = skip == Skip::k_before_row ? std::min(i0, k) : 0;
    const int64_t k1 = skip == Skip::k_after_row ? std::min(last + 1, k) : k;
    const float* ai = a + i0 * a_rs;
    for (int64_t j0 = 0; j0 < m; j0 += 16) {
      if (skip == Skip::above_diagonal && j0 > last) break;
      const int64_t nr = std::min<int64_t>(16, m - j0);
      float* cij = c + i0 * ldc + j0;
      switch (mr) {
        case 6: product_block_f32<6>(ai, a_rs, a_cs, bp + j0, mp, k0, k1, cij, ldc, nr); break;
        case 4: product_block_f32<4>(ai, a_rs, a_cs, bp + j0, mp, k0, k1, cij, ldc, nr); break;
        case 2: product_block_f32<2>(ai, a_rs, a_cs, bp + j0, mp, k0, k1, cij, ldc, nr); break;
        default: product_block_f32<1>(ai, a_rs, a_cs, bp + j0, mp, k0, k1, cij, ldc, nr); break;
      }
    }
    i0 += mr;
  }
}

// Transposes the 8 x 8 block r[0..7] (rows) in place: interleave pairs of rows, then pairs of
// pairs, then swap 128-bit halves (AVX2's unpack / shuffle / permute sequence, spelled portably).
[[gnu::always_inline]] inline void transpose_8x8(v8 r[8]) {
  const v8i lo32 = {0, 8, 1, 9, 4, 12, 5, 13}, hi32 = {2, 10, 3, 11, 6, 14, 7, 15};
  const v8i lo64 = {0, 1, 8, 9, 4, 5, 12, 13}, hi64 = {2, 3, 10, 11, 6, 7, 14, 15};
  const v8i lo128 = {0, 1, 2, 3, 8, 9, 10, 11}, hi128 = {4, 5, 6, 7, 12, 13, 14, 15};
  v8 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shuffle(r[i], r[i + 1], lo32);
    t[i + 1] = __builtin_shuffle(r[i], r[i + 1], hi32);
  }
  for (int i = 0; i < 8; i += 4) {  // u[i + c]: column c (and c + 4) of rows i..i+3
    u[i] = __builtin_shuffle(t[i], t[i + 2], lo64);
    u[i + 1] = __builtin_shuffle(t[i], t[i + 2], hi64);
    u[i + 2] = __builtin_shuffle(t[i + 1], t[i + 3], lo64);
    u[i + 3] = __builtin_shuffle(t[i + 1], t[i + 3], hi64);
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = __builtin_shuffle(u[c], u[c + 4], lo128);
    r[c + 4] = __builtin_shuffle(u[c], u[c + 4], hi128);
  }
}

// B [k, m] = b (or b^T with `transposed`) copied into rows of mp floats, zeros after m.
GLOBE_VECTOR_CLONES void pack_rows_f32(const float* b, int64_t ldb, bool transposed, int64_t k, int64_t m, int64_t mp,
                                       float* out) {
  if (transposed) {  // b is [m, k]: 8 x 8 blocks transposed in registers, the edges one by one
    const int64_t m8 = m / 8 * 8, k8 = k / 8 * 8;
    for (int64_t j = 0; j < m8; j += 8) {
      for (int64_t kk = 0; kk < k8; kk += 8) {
        v8 r[8];
        for (int64_t a = 0; a < 8; ++a) std::memcpy(&r[a], b + (j + a) * ldb + kk, sizeof r[a]);
        transpose_8x8(r);
        for (int64_t c = 0; c < 8; ++c) std::memcpy(out + (kk + c) * mp + j, &r[c], sizeof r[c]);
      }
      for (int64_t kk = k8; kk < k; ++kk)
        for (int64_t a = 0; a < 8; ++a) out[kk * mp + j + a] = b[(j + a) * ldb + kk];
    }
    for (int64_t j = m8; j < m; ++j)
      for (int64_t kk = 0; kk < k; ++kk) out[kk * mp + j] = b[j * ldb + kk];
  } else {
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < m; ++j) out[kk * mp + j] = b[kk * ldb + j];
  }
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = m; j < mp; ++j) out[kk * mp + j] = 0.0f;
}

// c [n, m] = op(a) [n, k] op(b) [k, m] (row-major, `ta` / `tb` saying which are transposed), with
// the parts `skip` names left out where the small kernel runs (float, one head's sizes); elsewhere
// one BLAS call computes everything (the skipped parts are zeros or unread).
template <class T>
void product(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t n, int64_t m, int64_t k, const T* a, int64_t lda,
             const T* b, int64_t ldb, T* c, int64_t ldc, Skip skip, std::vector<T>& pack) {
  if constexpr (std::is_same_v<T, float>) {
    if (n <= 512 && m <= 512 && k <= 512) {
      const bool at = ta == CblasTrans;
      if (tb == CblasNoTrans && m % 16 == 0) {  // b's rows as they are
        small_product_f32(a, at ? 1 : lda, at ? lda : 1, b, ldb, n, m, k, c, ldc, skip);
        return;
      }
      const int64_t mp = (m + 15) / 16 * 16;
      pack.resize(size_t(k * mp));
      pack_rows_f32(b, ldb, tb == CblasTrans, k, m, mp, pack.data());
      small_product_f32(a, at ? 1 : lda, at ? lda : 1, pack.data(), mp, n, m, k, c, ldc, skip);
      return;
    }
  }
  gemm<T>(ta, tb, n, m, k, a, lda, b, ldb, c, ldc);
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
    std::vector<T> scores(static_cast<size_t>(nn)), own(probs ? 0 : static_cast<size_t>(nn)), pack;
    const T* base = l.qkv.data<T>();
    for (int64_t e = 0; e < l.entries; ++e) {
      const T* q = base + batch_offset(e, l.batch, l.qkv.strides(), 1);
      T* p = probs ? probs->data<T>() + e * nn : own.data();
      T* out = y.data<T>() + batch_offset(e, l.batch, y.strides(), 0);
      product<T>(CblasNoTrans, CblasTrans, n, n, l.d, q, l.ld, q + l.kv, l.ld, scores.data(), n,  // q k^T [T, T]
                 Skip::above_diagonal, pack);
      causal_softmax_matrix<T>(scores.data(), p, n, T(scale));  // reads each row's kept part only
      product<T>(CblasNoTrans, CblasNoTrans, n, l.d, n, p, n, q + 2 * l.kv, l.ld, out, ldy,  // P v [T, D]
                 Skip::k_after_row, pack);
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
    // dP zeroed once: the parts above the diagonal a skipping product never writes stay 0 (P is 0
    // there, so dS is too)
    std::vector<T> own(probs.defined() ? 0 : static_cast<size_t>(nn)), dp(static_cast<size_t>(nn)),
        ds(static_cast<size_t>(nn)), pack;
    const T* base = l.qkv.data<T>();
    for (int64_t e = 0; e < l.entries; ++e) {
      const T* q = base + batch_offset(e, l.batch, l.qkv.strides(), 1);
      const T* k = q + l.kv;
      const T* v = k + l.kv;
      const T* g = gy.data<T>() + batch_offset(e, l.batch, gy.strides(), 0);
      T* dq = dqkv.data<T>() + batch_offset(e, l.batch, dqkv.strides(), 1);
      const T* p = probs.defined() ? probs.data<T>() + e * nn : own.data();
      if (!probs.defined()) {  // the forward's P again, the same way (ds as the scores' scratch)
        product<T>(CblasNoTrans, CblasTrans, n, n, d, q, l.ld, k, l.ld, ds.data(), n, Skip::above_diagonal, pack);
        causal_softmax_matrix<T>(ds.data(), own.data(), n, T(scale));
      }
      product<T>(CblasNoTrans, CblasTrans, n, n, d, g, ldg, v, l.ld, dp.data(), n,  // dP = gy v^T [T, T]
                 Skip::above_diagonal, pack);
      softmax_backward_matrix<T>(p, dp.data(), ds.data(), n, T(scale));  // dS (scale included)
      product<T>(CblasTrans, CblasNoTrans, n, d, n, p, n, g, ldg, dq + 2 * dkv, ldd,  // dV = P^T gy
                 Skip::k_before_row, pack);
      product<T>(CblasNoTrans, CblasNoTrans, n, d, n, ds.data(), n, k, l.ld, dq, ldd,  // dQ = dS k
                 Skip::k_after_row, pack);
      product<T>(CblasTrans, CblasNoTrans, n, d, n, ds.data(), n, q, l.ld, dq + dkv, ldd,  // dK = dS^T q
                 Skip::k_before_row, pack);
    }
  });
  return dqkv;
}

}  // namespace globe::kernels
