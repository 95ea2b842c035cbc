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
// summed over a contiguous copy of it (the same strides wherever it lies, so the kernel takes
// the same path), the leaves' sums added by tree_sum. a's dim d holds whole leaves. With `last`
// > d, dims d..last are summed as one dim of their flattened (row-major) index, and the result
// has that one dim (of 1) in their place.
Tensor leaf_sum(const Tensor& a, int64_t d, int64_t leaf, int64_t last = -1);

}  // namespace globe::kernels
