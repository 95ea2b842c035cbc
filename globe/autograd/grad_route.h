// The route a leaf's gradient takes to its leaf: the one interface the autograd engine declares
// and the global layer implements (globe/global/grad_buckets.cpp), instead of a table of function
// pointers. The engine calls it at fixed points of every backward pass, which come at the same
// points on every rank (every rank runs the same graph).
//
// One word names the state this route manages: a gradient is *pending* while it is kept in its own
// layout (a partial sum on a data-parallel axis, say) instead of the leaf's, its reduction deferred
// or in flight. TensorImpl::grad_pending marks it; Tensor::grad() resolves it (the reduction
// completes and the gradient takes the leaf's layout).
#pragma once

#include "globe/core/tensor.h"

namespace globe {

class GradRoute {
 public:
  virtual ~GradRoute() = default;
  // `grad` in the leaf's own placement and SBP (data parallel's P -> B all-reduce comes from here).
  virtual Tensor to_leaf_layout(const Tensor& grad, const Tensor& leaf) { return grad; }
  // Whether `grad` may stay pending while it accumulates: the same placement as the leaf, and a
  // partial sum where the leaf is broadcast.
  virtual bool may_stay_pending(const Tensor& grad, const Tensor& leaf) { return false; }
  // `leaf`'s gradient is complete for this backward pass: a reduction waiting for it may start.
  virtual void grad_ready(const Tensor& leaf) {}
  // A backward pass ended: reductions still collecting gradients start.
  virtual void backward_done() {}
  // Between two nodes: reductions in flight move on, without waiting.
  virtual void progress() {}
  // Before `leaf`'s pending gradient is added to: the reduction it is in completes.
  virtual void finish(const Tensor& leaf) {}
  // Before gradients are read: every reduction in flight completes.
  virtual void finish_all() {}
};

// The installed route: the local one (every gradient already in its leaf's layout) until the
// global layer installs its own (detail::install_hooks).
GradRoute& grad_route();
void set_grad_route(GradRoute* route);

}  // namespace globe
