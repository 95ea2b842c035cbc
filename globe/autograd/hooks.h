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

  // Reductions overlapped with backward (globe/global/grad_buckets.cpp). Every rank runs the same
  // graph, so these come at the same points on every rank.
  // `leaf`'s gradient is complete for this backward pass (no later node adds to it): a reduction
  // it waits for may start.
  void (*grad_ready)(const Tensor& leaf) = [](const Tensor&) {};
  // A backward pass ended: reductions still collecting gradients start.
  void (*backward_done)() = [] {};
  // Between two nodes: reductions in flight move on, without waiting.
  void (*progress)() = [] {};
  // Before `leaf`'s gradient is added to: the reduction it is in completes.
  void (*finish_reduction)(const Tensor& leaf) = [](const Tensor&) {};
  // Before gradients are read: reductions in flight complete.
  void (*finish_reductions)() = [] {};
};
inline AutogradHooks autograd_hooks;

}  // namespace globe::detail
