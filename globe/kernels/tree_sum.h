// Deterministic mode's one order of addition (core/deterministic.h): consecutive pieces of a sum
// added in a pairwise tree over piece index. A range of 2^j pieces starting at a multiple of 2^j is
// one subtree, so whoever holds it (a rank, a leaf loop) computes the same value.
#pragma once

#include <vector>

#include "globe/core/tensor.h"

namespace globe::kernels {

// pieces[0] + ... + pieces[n-1] (same shape, dtype and device): a range [lo, hi) adds its first
// half (the largest power of two below hi - lo) and its rest, in that order. One piece is
// returned as it is.
Tensor tree_sum(const std::vector<Tensor>& pieces);

// `a` summed over dim `d` (kept, as 1) in that order: each leaf of `leaf` consecutive indices
// summed over a contiguous copy of it (the same strides wherever it lies, so the kernel takes
// the same path), the leaves' sums added by tree_sum. a's dim d holds whole leaves.
Tensor leaf_sum(const Tensor& a, int64_t d, int64_t leaf);

}  // namespace globe::kernels
