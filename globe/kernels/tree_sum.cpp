#include "globe/kernels/tree_sum.h"

#include <algorithm>

#include "globe/base/error.h"
#include "globe/core/deterministic.h"
#include "globe/kernels/device_kernels.h"
#include "globe/kernels/tree_order.h"

namespace globe::kernels {

Tensor tree_sum(const std::vector<Tensor>& pieces) {
  GLOBE_CHECK(!pieces.empty(), "[tree_sum] no pieces");
  const int64_t n = int64_t(pieces.size());
  std::vector<Tensor> slots(size_t(tree_slots(n)));
  auto piece = [&](int64_t l, int s) { slots[size_t(s)] = pieces[size_t(detail::leaf_in_test_order(l, n))]; };
  auto add = [&](int s) {
    const Tensor &left = slots[size_t(s)], &right = slots[size_t(s) + 1];
    slots[size_t(s)] = kernels_for(left).binary(BinaryKind::add, left, right, left.shape());
  };
  tree_walk(0, n, 0, piece, add);
  return slots[0];
}

Tensor leaf_sum(const Tensor& in, int64_t d, int64_t leaf, int64_t last) {
  Tensor a = in;
  if (last > d) {  // dims d..last as one: a dense copy's view with them merged
    const Tensor dense = device_dense(in);
    Shape merged(in.shape().begin(), in.shape().begin() + d);
    merged.push_back(1);
    for (int64_t i = d; i <= last; ++i) merged.back() *= in.shape()[size_t(i)];
    merged.insert(merged.end(), in.shape().begin() + last + 1, in.shape().end());
    a = Tensor::view_of(dense, merged, contiguous_strides(merged), dense.offset());
  }
  GLOBE_CHECK(leaf > 0 && a.shape()[size_t(d)] >= leaf && a.shape()[size_t(d)] % leaf == 0, "[sum] deterministic mode: ",
              a.shape()[size_t(d)], " summed indices are not whole leaves of ", leaf);
  Shape keep = a.shape();
  keep[size_t(d)] = 1;
  if (a.dtype() == DType::float32 || a.dtype() == DType::float64) {  // the device's exactly specified sum
    const Tensor x = device_dense(a);
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < d; ++i) outer *= x.shape()[size_t(i)];
    for (int64_t i = d + 1; i < x.dim(); ++i) inner *= x.shape()[size_t(i)];
    const Shape three = {outer, x.shape()[size_t(d)], inner};
    const Tensor sum = kernels_for(x).leaf_tree_sum(Tensor::view_of(x, three, contiguous_strides(three), x.offset()), leaf);
    return Tensor::view_of(sum, keep, contiguous_strides(keep), sum.offset());
  }
  // 16-bit floats: each leaf summed by the device's kernel over a contiguous copy of it (the same
  // strides wherever it lies, so the kernel takes the same path), added by tree_sum.
  const auto& k = kernels_for(a);
  std::vector<Tensor> leaves;
  for (int64_t at = 0; at < a.shape()[size_t(d)]; at += leaf)
    leaves.push_back(k.sum_to_keepdim(device_dense(Tensor::narrow_view(a, d, at, leaf)), keep));
  return tree_sum(leaves);
}

namespace {

// The CPU's sparse embedding_backward_tree: a counting sort gives each token its rows in order;
// walk(lo, hi, a, b, s) writes into slot s the tree sum over leaves [lo, hi) of the token's rows
// pos[a, b) (all in those leaves), and returns false, writing nothing, where there are none (the
// sum is then +0). Adding an absent side adds +0, as the dense sum would (-0 + 0 is +0).
template <class T>
void embedding_tree_cpu(const T* g, const int64_t* idx, int64_t rows, int64_t d, int64_t vocab, int64_t leaf, T* out) {
  std::vector<int64_t> start(static_cast<size_t>(vocab) + 1, 0), pos(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    GLOBE_CHECK(idx[i] >= 0 && idx[i] < vocab, "[embedding_backward] index ", idx[i], " out of range for ", vocab,
                " rows");
    ++start[size_t(idx[i]) + 1];
  }
  for (int64_t v = 0; v < vocab; ++v) start[size_t(v) + 1] += start[size_t(v)];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < rows; ++i) pos[size_t(fill[size_t(idx[i])]++)] = i;
  const int64_t leaves = rows / leaf;
  std::vector<T> slots(size_t(tree_slots(leaves) * d));
  auto walk = [&](auto& self, int64_t lo, int64_t hi, int64_t a, int64_t b, int s) -> bool {
    if (a == b) return false;
    T* to = slots.data() + s * d;
    if (hi - lo == 1) {
      std::fill(to, to + d, T(0));
      for (int64_t p = a; p < b; ++p)
        for (int64_t j = 0; j < d; ++j) to[j] += g[pos[size_t(p)] * d + j];
      return true;
    }
    const int64_t mid = lo + tree_left(hi - lo);
    int64_t c = a;
    while (c < b && pos[size_t(c)] < mid * leaf) ++c;
    const bool left = self(self, lo, mid, a, c, s), right = self(self, mid, hi, c, b, s + 1);
    const T* r = to + d;
    if (left && right) for (int64_t j = 0; j < d; ++j) to[j] = to[j] + r[j];
    else if (left) for (int64_t j = 0; j < d; ++j) to[j] = to[j] + T(0);
    else for (int64_t j = 0; j < d; ++j) to[j] = T(0) + r[j];
    return true;
  };
  for (int64_t v = 0; v < vocab; ++v)
    if (walk(walk, 0, leaves, start[size_t(v)], start[size_t(v) + 1], 0)) std::copy_n(slots.data(), d, out + v * d);
}

}  // namespace

Tensor embedding_backward_tree(const Tensor& grad, const Tensor& indices, int64_t vocab, int64_t leaf) {
  const int64_t rows = indices.numel(), d = grad.shape().back();
  GLOBE_CHECK(leaf > 0 && rows % leaf == 0, "[embedding_backward] deterministic mode: ", rows,
              " rows are not whole leaves of ", leaf);
  const auto& k = kernels_for(grad);
  if (grad.device().type != DeviceType::cpu) {
    const Tensor g2 = device_dense(grad), i1 = device_dense(indices);
    const Shape rows_d{rows, d}, rows_1{rows};
    std::vector<Tensor> leaves;
    for (int64_t at = 0; at < rows; at += leaf)
      leaves.push_back(k.embedding_backward(Tensor::narrow_view(Tensor::view_of(g2, rows_d, contiguous_strides(rows_d), g2.offset()), 0, at, leaf),
                                            Tensor::narrow_view(Tensor::view_of(i1, rows_1, contiguous_strides(rows_1), i1.offset()), 0, at, leaf),
                                            vocab));
    return tree_sum(leaves);
  }
  const bool narrow16 = grad.dtype() != DType::float32 && grad.dtype() != DType::float64;
  const Tensor g = narrow16 ? device_convert(grad, DType::float32) : device_dense(grad), i = device_dense(indices);
  Tensor out = Tensor::empty({vocab, d}, g.dtype());
  if (rows > 0)
    visit_floating(g.dtype(), "embedding_backward", [&](auto tag) {
      using T = decltype(tag);
      embedding_tree_cpu<T>(g.data<T>(), i.data<int64_t>(), rows, d, vocab, leaf, out.data<T>());
    });
  return narrow16 ? device_convert(out, grad.dtype()) : out;
}

}  // namespace globe::kernels
