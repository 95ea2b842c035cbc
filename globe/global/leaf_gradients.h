// The global layer's route of a leaf's gradient (autograd/leaf_gradients.h): a term is boxed to
// the leaf's placement and SBP, except a partial sum where the leaf is broadcast, which stays
// *pending* (unreduced) while terms accumulate and is reduced once: in a bucket while the
// backward goes on (grad_buckets.h), by an optimizer's resolve_pending_grads, or when read.
#pragma once

#include "globe/autograd/leaf_gradients.h"
#include "globe/core/tensor.h"

namespace globe::detail {

// The implementation detail::install_hooks installs.
LeafGradients& global_leaf_gradients();

// Whether `leaf`'s gradient is pending: the gradient this route left as a partial sum, not yet
// reduced (maybe in flight). Any gradient set since (zero_grad, set_grad, a bucket's result) is not.
bool grad_pending(const Tensor& leaf);

}  // namespace globe::detail
