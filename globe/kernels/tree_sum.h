// Deterministic mode's one order of addition (core/deterministic.h) on tensors: consecutive pieces
// of a sum added in the tree of kernels/tree_order.h.
#pragma once

#include <vector>

#include "globe/core/tensor.h"

namespace globe::kernels {

// pieces[0] + ... + pieces[n-1] (same shape, dtype and device) in tree_order.h's tree. One piece
// is returned as it is.
Tensor tree_sum(const std::vector<Tensor>& pieces);

// `a` summed over dim `d` (kept, as 1) in that order: each leaf of `leaf` consecutive indices
// summed on its own (float32 / float64, on every device: in index order from 0 in the dtype, by
// the device table's leaf_tree_sum, whose bits do not depend on the device or on how many
// outputs a rank holds; 16-bit floats: by the device's sum over a contiguous copy of the leaf,
// the same strides wherever it lies, so the kernel takes the same path), the leaves' sums added
// in tree_sum's tree. a's dim d holds whole leaves, at least one. With `last`
// > d, dims d..last are summed as one dim of their flattened (row-major) index, and the result
// has that one dim (of 1) in their place.
Tensor leaf_sum(const Tensor& a, int64_t d, int64_t leaf, int64_t last = -1);

// The embedding's gradient in that order: grad [..., D], indices [...] -> [vocab, D], the rows
// (the flattened index of indices, whole leaves of `leaf`) summed per token as if each leaf's
// embedding_backward (its rows added in order from 0) were added in tree_order.h's tree, a leaf
// without the token counting as +0. On the CPU a token's tree visits only the leaves holding it
// (sparse); elsewhere each leaf's dense [vocab, D] gradient is computed and added.
Tensor embedding_backward_tree(const Tensor& grad, const Tensor& indices, int64_t vocab, int64_t leaf);

}  // namespace globe::kernels
