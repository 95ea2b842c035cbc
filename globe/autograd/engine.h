// Reverse-mode differentiation over the recorded graph.
#pragma once

#include "globe/core/tensor.h"

namespace globe {

// Accumulates d(root)/d(leaf) into every leaf that requires grad. `grad_seed` defaults to ones
// (root must then be a scalar). Runs under no-grad: no graph of the graph.
void run_backward(const Tensor& root, const Tensor& grad_seed = Tensor());

namespace detail {
// Installed by the global layer: boxes a gradient to the leaf's own placement and SBP before it is
// accumulated (SPEC §6: data parallel's P → B allreduce comes from here).
extern Tensor (*g_grad_to_leaf_layout)(const Tensor& grad, const Tensor& leaf);
}  // namespace detail

}  // namespace globe
