#include "globe/kernels/tree_sum.h"

#include "globe/base/error.h"
#include "globe/core/deterministic.h"
#include "globe/kernels/device_kernels.h"
#include "globe/kernels/tree_order.h"

namespace globe::kernels {

Tensor tree_sum(const std::vector<Tensor>& pieces) {
  GLOBE_CHECK(!pieces.empty(), "[tree_sum] no pieces");
  const int64_t n = int64_t(pieces.size());
  const int64_t turn = detail::leaves_rotated_for_test() ? 1 : 0;  // the test hook's rotated order
  std::vector<Tensor> slots(size_t(tree_slots(n)));
  auto piece = [&](int64_t l, int s) { slots[size_t(s)] = pieces[size_t((l + turn) % n)]; };
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
  Shape keep = a.shape();
  keep[size_t(d)] = 1;
  const auto& k = kernels_for(a);
  std::vector<Tensor> leaves;
  for (int64_t at = 0; at < a.shape()[size_t(d)]; at += leaf)
    leaves.push_back(k.sum_to_keepdim(device_dense(Tensor::narrow_view(a, d, at, leaf)), keep));
  return tree_sum(leaves);
}

}  // namespace globe::kernels
