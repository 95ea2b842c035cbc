// Reduction and indexing kernels on local tensors.
#pragma once

#include <vector>

#include "globe/core/tensor.h"

namespace globe::kernels {

// Sum of `a` over the dims where `keep_shape` (same rank as a) is 1 and a is not; result has
// keep_shape. Float32 accumulates in float64.
Tensor sum_to_keepdim(const Tensor& a, const Shape& keep_shape);
// Deterministic mode's leaf sum over dim 1 of x [outer, length, inner] (device_kernels.h's
// leaf_tree_sum).
Tensor leaf_tree_sum(const Tensor& x, int64_t leaf);
// The sum of the squares of a's elements (floating), accumulated in double.
double sum_of_squares(const Tensor& a);
// Index of the max along `dim`, result shaped like a with dim's extent 1 (int64).
Tensor argmax_keepdim(const Tensor& a, int64_t dim);
// torch.gather / the scatter-add adjoint along `dim`.
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src);

}  // namespace globe::kernels
