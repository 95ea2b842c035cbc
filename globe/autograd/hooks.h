// What the global layer lends the autograd engine: how a gradient reaches its leaf's layout.
// Filled by globe/global/hooks.cpp (install_hooks); until then each entry is the local behaviour.
#pragma once

#include "globe/core/tensor.h"

namespace globe::detail {

struct AutogradHooks {
  // Boxes a gradient to the leaf's own placement and SBP before it is accumulated (docs/design.md
  // §6: data parallel's P -> B all-reduce comes from here).
  Tensor (*grad_to_leaf_layout)(const Tensor& grad, const Tensor& leaf) = [](const Tensor& g, const Tensor&) {
    return g;
  };
  // Whether a gradient may be kept in its own layout while it accumulates and be boxed to the
  // leaf's only when read (deferred reduction): the same placement, and partial_sum where the leaf
  // is broadcast.
  bool (*grad_may_wait)(const Tensor& grad, const Tensor& leaf) = [](const Tensor&, const Tensor&) { return false; };
};
inline AutogradHooks autograd_hooks;

}  // namespace globe::detail
