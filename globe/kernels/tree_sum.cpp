#include "globe/kernels/tree_sum.h"

#include <algorithm>

#include "globe/base/error.h"
#include "globe/core/deterministic.h"
#include "globe/kernels/device_kernels.h"

namespace globe::kernels {

namespace {

Tensor tree(const std::vector<Tensor>& p, size_t lo, size_t hi) {
  if (hi - lo == 1) return p[lo];
  size_t half = 1;
  while (2 * half < hi - lo) half *= 2;
  const Tensor left = tree(p, lo, lo + half), right = tree(p, lo + half, hi);
  return kernels_for(left).binary(BinaryKind::add, left, right, left.shape());
}

}  // namespace

Tensor tree_sum(const std::vector<Tensor>& pieces) {
  GLOBE_CHECK(!pieces.empty(), "[tree_sum] no pieces");
  if (!detail::leaves_rotated_for_test()) return tree(pieces, 0, pieces.size());
  std::vector<Tensor> rotated = pieces;
  std::rotate(rotated.begin(), rotated.begin() + 1, rotated.end());
  return tree(rotated, 0, rotated.size());
}

Tensor leaf_sum(const Tensor& a, int64_t d, int64_t leaf) {
  Shape keep = a.shape();
  keep[size_t(d)] = 1;
  const auto& k = kernels_for(a);
  std::vector<Tensor> leaves;
  for (int64_t at = 0; at < a.shape()[size_t(d)]; at += leaf)
    leaves.push_back(k.sum_to_keepdim(device_dense(Tensor::narrow_view(a, d, at, leaf)), keep));
  return tree_sum(leaves);
}

}  // namespace globe::kernels
