#include "globe/kernels/cpu/attention.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <vector>

#include "globe/core/strided.h"
#include "globe/kernels/cpu/blas.h"
#include "globe/kernels/cpu/elementwise.h"
#include "globe/kernels/cpu/softmax_rows.h"
#include "globe/kernels/cpu/vector_clones.h"

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

// `t` as BLAS reads it untransposed (unit stride along the last dim): blas_view's view where that
// is how it reads t, else a contiguous copy.
BlasView rows_view(const Tensor& t) {
  const BlasView v = blas_view(t);
  if (v.trans == CblasNoTrans) return v;
  return {dense(t), CblasNoTrans, std::max<int64_t>(t.shape().back(), 1)};
}

// Calls fn(offsets) for each entry of `batch`, offsets[k] being operand k's element offset for it
// (its batch strides in strides[k]).
template <size_t K, class Fn>
void for_each_entry(const Shape& batch, const std::array<Shape, K>& strides, Fn&& fn) {
  for_each_run<K>(batch, strides, {}, [&](const StridedRun<K>& r) {
    for (int64_t i = 0; i < r.count; ++i) {
      std::array<int64_t, K> offsets;
      for (size_t k = 0; k < K; ++k) offsets[k] = r.offset[k] + i * r.stride[k];
      fn(offsets);
    }
  });
}

// Strides [first, first + count) of t.
Shape strides_of(const Tensor& t, size_t first, size_t count) {
  return Shape(t.strides().begin() + int64_t(first), t.strides().begin() + int64_t(first + count));
}

struct Layout {  // the packed input as BLAS reads it
  BlasView qkv;
  Shape batch;      // the dims between the 3 and [T, D]
  int64_t n, d;     // T, D
  int64_t kv;       // the distance from q to k (and k to v)
  Shape probs;      // the strides of P [..., T, T] (contiguous) over the batch
};

Layout layout_of(const Tensor& qkv_in) {
  Layout l;
  l.qkv = rows_view(qkv_in);
  const Shape& s = l.qkv.t.shape();
  l.batch = Shape(s.begin() + 1, s.end() - 2);
  l.n = s[s.size() - 2];
  l.d = s.back();
  l.kv = l.qkv.t.strides()[0];
  l.probs = contiguous_strides(l.batch);
  for (int64_t& st : l.probs) st *= l.n * l.n;
  return l;
}

// P = causal softmax of q k^T * scale [n, n] for one entry, `scores` as scratch (the forward, and
// the backward when it has no saved P: the same bits either way).
template <class T>
void probabilities(const T* q, const T* k, const Layout& l, T scale, T* scores, T* p, std::vector<T>& pack) {
  product<T>(CblasNoTrans, CblasTrans, l.n, l.n, l.d, q, l.qkv.ld, k, l.qkv.ld, scores, l.n, Skip::above_diagonal,
             pack);
  causal_softmax_rows_of(scores, p, l.n, l.n, 0, l.n, scale);  // reads each row's kept part only
}

}  // namespace

Tensor causal_attention(const Tensor& qkv_in, double scale, Tensor* probs) {
  const Layout l = layout_of(qkv_in);
  const Tensor& qkv = l.qkv.t;
  const size_t nb = l.batch.size();
  const Tensor q_view = Tensor::view_of(qkv, Shape(qkv.shape().begin() + 1, qkv.shape().end()),
                                        strides_of(qkv, 1, nb + 2), qkv.offset());
  Tensor y = uninitialized_in_order_of(q_view);
  Shape p_shape = l.batch;
  p_shape.insert(p_shape.end(), {l.n, l.n});
  if (probs) *probs = Tensor::uninitialized(p_shape, qkv.dtype());
  if (y.numel() == 0) return y;
  visit_floating(qkv.dtype(), "causal_attention", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = l.n, ldy = blas_view(y).ld;
    std::vector<T> scores(static_cast<size_t>(n * n)), own(probs ? 0 : static_cast<size_t>(n * n)), pack;
    for_each_entry<3>(l.batch, {strides_of(qkv, 1, nb), strides_of(y, 0, nb), l.probs}, [&](const auto& at) {
      const T* q = qkv.data<T>() + at[0];
      T* p = probs ? probs->data<T>() + at[2] : own.data();
      probabilities<T>(q, q + l.kv, l, T(scale), scores.data(), p, pack);
      product<T>(CblasNoTrans, CblasNoTrans, n, l.d, n, p, n, q + 2 * l.kv, l.qkv.ld, y.data<T>() + at[1], ldy,
                 Skip::k_after_row, pack);  // P v [T, D]
    });
  });
  return y;
}

Tensor causal_attention_backward(const Tensor& qkv_in, const Tensor& gy_in, double scale, const Tensor& probs) {
  const Layout l = layout_of(qkv_in);
  const Tensor& qkv = l.qkv.t;
  const BlasView gy = rows_view(gy_in);
  Tensor dqkv = uninitialized_in_order_of(qkv);
  if (dqkv.numel() == 0) return dqkv;
  visit_floating(qkv.dtype(), "causal_attention_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = l.n, d = l.d, nn = n * n, ld = l.qkv.ld, ldg = gy.ld, ldd = blas_view(dqkv).ld;
    const int64_t dkv = dqkv.strides()[0];
    const size_t nb = l.batch.size();
    // dP zeroed once: the parts above the diagonal a skipping product never writes stay 0 (P is 0
    // there, so dS is too)
    std::vector<T> own(probs.defined() ? 0 : static_cast<size_t>(nn)), dp(static_cast<size_t>(nn)),
        ds(static_cast<size_t>(nn)), pack;
    const std::array<Shape, 4> strides = {strides_of(qkv, 1, nb), strides_of(gy.t, 0, nb), strides_of(dqkv, 1, nb),
                                          l.probs};
    for_each_entry<4>(l.batch, strides, [&](const auto& at) {
      const T* q = qkv.data<T>() + at[0];
      const T* k = q + l.kv;
      const T* v = k + l.kv;
      const T* g = gy.t.data<T>() + at[1];
      T* dq = dqkv.data<T>() + at[2];
      const T* p = probs.defined() ? probs.data<T>() + at[3] : own.data();
      if (!probs.defined()) probabilities<T>(q, k, l, T(scale), ds.data(), own.data(), pack);  // ds: scratch
      product<T>(CblasNoTrans, CblasTrans, n, n, d, g, ldg, v, ld, dp.data(), n,  // dP = gy v^T [T, T]
                 Skip::above_diagonal, pack);
      softmax_backward_matrix<T>(p, dp.data(), ds.data(), n, T(scale));  // dS (scale included)
      product<T>(CblasTrans, CblasNoTrans, n, d, n, p, n, g, ldg, dq + 2 * dkv, ldd,  // dV = P^T gy
                 Skip::k_before_row, pack);
      product<T>(CblasNoTrans, CblasNoTrans, n, d, n, ds.data(), n, k, ld, dq, ldd,  // dQ = dS k
                 Skip::k_after_row, pack);
      product<T>(CblasTrans, CblasNoTrans, n, d, n, ds.data(), n, q, ld, dq + dkv, ldd,  // dK = dS^T q
                 Skip::k_before_row, pack);
    });
  });
  return dqkv;
}

}  // namespace globe::kernels
