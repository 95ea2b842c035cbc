#include "globe/kernels/cpu/reduce.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "globe/core/deterministic.h"
#include "globe/core/strided.h"
#include "globe/kernels/cpu/elementwise.h"
#include "globe/kernels/cpu/vector_clones.h"
#include "globe/kernels/tree_order.h"

namespace globe::kernels {

namespace {

// The two runs a float sum meets, as plain loops the compiler vectorises (double accumulators,
// as the generic loop keeps): acc[i] += s[i] (a row added into the column sums, as a bias's
// gradient), and the total of n consecutive floats (lane_sum).
GLOBE_VECTOR_CLONES void add_row_f32(const float* __restrict s, double* __restrict acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += double(s[i]);
}

GLOBE_VECTOR_CLONES double total_f32(const float* __restrict s, int64_t n) {
  return lane_sum(n, [&](int64_t i) { return double(s[i]); });
}

GLOBE_VECTOR_CLONES double squares_f32(const float* __restrict s, int64_t n) {
  return lane_sum(n, [&](int64_t i) { return double(s[i]) * double(s[i]); });
}

}  // namespace

double sum_of_squares(const Tensor& a_in) {
  const Tensor a = dense(a_in);
  return visit_floating(a.dtype(), "sum_of_squares", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) return squares_f32(a.data<float>(), a.numel());
    const T* p = a.data<T>();
    return lane_sum(a.numel(), [&](int64_t i) { return double(p[i]) * double(p[i]); });
  });
}

namespace {

// Per output element, each leaf's terms added in index order from 0, the leaves in
// tree_order.h's tree (the same adds as tree_sum's, in T), in one pass over x [outer, length, inner].
template <class T>
void leaf_tree(const T* x, int64_t outer, int64_t length, int64_t inner, int64_t leaf, T* out) {
  const int64_t leaves = length / leaf;
  std::vector<T> slots(size_t(tree_slots(leaves) * inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* xo = x + o * length * inner;
    auto piece = [&](int64_t l, int s) {
      T* to = slots.data() + s * inner;
      std::fill(to, to + inner, T(0));
      const int64_t first = detail::leaf_in_test_order(l, leaves) * leaf;
      for (int64_t q = first; q < first + leaf; ++q)
        for (int64_t i = 0; i < inner; ++i) to[i] += xo[q * inner + i];
    };
    auto add = [&](int s) {
      T* to = slots.data() + s * inner;
      for (int64_t i = 0; i < inner; ++i) to[i] = to[i] + to[inner + i];
    };
    tree_walk(0, leaves, 0, piece, add);
    std::copy_n(slots.data(), inner, out + o * inner);
  }
}

}  // namespace

Tensor leaf_tree_sum(const Tensor& x, int64_t leaf) {
  const int64_t outer = x.shape()[0], length = x.shape()[1], inner = x.shape()[2];
  Tensor out = Tensor::uninitialized({outer, 1, inner}, x.dtype());
  visit_floating(x.dtype(), "sum", [&](auto tag) {
    using T = decltype(tag);
    leaf_tree<T>(x.data<T>(), outer, length, inner, leaf, out.data<T>());
  });
  return out;
}

Tensor sum_to_keepdim(const Tensor& a, const Shape& keep) {
  return visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
    std::vector<Acc> acc(numel_of(keep), Acc(0));
    const T* src = static_cast<const T*>(a.storage()->data);
    Shape acc_strides = contiguous_strides(keep);
    for (size_t d = 0; d < keep.size(); ++d)
      if (keep[d] == 1) acc_strides[d] = 0;  // reduced dim: every position lands on one slot
    for_each_run<2>(a.shape(), {acc_strides, a.strides()}, {0, a.offset()}, [&](const StridedRun<2>& r) {
                      const T* s = src + r.offset[1];
                      Acc* d = acc.data() + r.offset[0];
                      if constexpr (std::is_same_v<T, float>) {
                        if (r.stride[1] == 1 && r.stride[0] == 0) {
                          *d += total_f32(s, r.count);
                          return;
                        }
                        if (r.stride[1] == 1 && r.stride[0] == 1) {
                          add_row_f32(s, d, r.count);
                          return;
                        }
                      }
                      if (r.stride[0] == 0) {
                        Acc total = 0;
                        for (int64_t i = 0; i < r.count; ++i) total += s[i * r.stride[1]];
                        *d += total;
                      } else {
                        for (int64_t i = 0; i < r.count; ++i) d[i * r.stride[0]] += s[i * r.stride[1]];
                      }
                    });
    Tensor out = Tensor::uninitialized(keep, a.dtype());
    T* dst = out.data<T>();
    for (size_t i = 0; i < acc.size(); ++i) dst[i] = static_cast<T>(acc[i]);
    return out;
  });
}

Tensor argmax_keepdim(const Tensor& a, int64_t dim) {
  Shape keep = a.shape();
  const int64_t n = keep[dim];
  GLOBE_CHECK(n > 0, "[argmax] dim ", dim, " of shape ", shape_str(a.shape()), " is empty");
  keep[dim] = 1;
  Tensor out = Tensor::uninitialized(keep, kInt64);
  int64_t* dst = out.data<int64_t>();
  const int64_t step = a.strides()[dim];
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(a.storage()->data);
    for_each_run<1>(keep, {a.strides()}, {a.offset()}, [&](const StridedRun<1>& r) {
      for (int64_t i = 0; i < r.count; ++i) {
        const T* p = src + r.offset[0] + i * r.stride[0];
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j)
          if (p[j * step] > p[best * step]) best = j;
        *dst++ = best;
      }
    });
  });
  return out;
}

namespace {

// Calls fn(a_offset, index_position, out_offset) for every element of `index`, with a's offset
// pointing at the indexed element along dim. Checks index bounds.
template <class Fn>
void for_each_indexed(const char* op, const Shape& a_shape, const Shape& a_strides, int64_t a_offset,
                      int64_t dim, const Tensor& index, Fn&& fn) {
  GLOBE_CHECK(index.dtype() == kInt64, "[", op, "] index must be int64, got ", dtype_name(index.dtype()));
  Shape walk = a_strides;
  walk[dim] = 0;
  const int64_t* idx = static_cast<const int64_t*>(index.storage()->data);
  const int64_t extent = a_shape[dim], step = a_strides[dim];
  int64_t out_pos = 0;
  for_each_run<2>(index.shape(), {walk, index.strides()}, {a_offset, index.offset()},
                  [&](const StridedRun<2>& r) {
                    for (int64_t i = 0; i < r.count; ++i) {
                      const int64_t k = idx[r.offset[1] + i * r.stride[1]];
                      GLOBE_CHECK(k >= 0 && k < extent, "[", op, "] index ", k,
                                  " out of range for dim ", dim, " of shape ", shape_str(a_shape),
                                  " (index shape ", shape_str(index.shape()), ")");
                      fn(r.offset[0] + i * r.stride[0] + k * step, out_pos++);
                    }
                  });
}

}  // namespace

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  Tensor out = Tensor::uninitialized(index.shape(), a.dtype());
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(a.storage()->data);
    T* dst = out.data<T>();
    for_each_indexed("gather", a.shape(), a.strides(), a.offset(), dim, index,
                     [&](int64_t from, int64_t to) { dst[to] = src[from]; });
  });
  return out;
}

Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = Tensor::empty(shape, src.dtype());
  Tensor s = dense(src);
  visit_dtype(src.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* from = s.data<T>();
    T* dst = out.data<T>();
    for_each_indexed("scatter_add", shape, out.strides(), 0, dim, index,
                     [&](int64_t to, int64_t at) { dst[to] += from[at]; });
  });
  return out;
}

}  // namespace globe::kernels
