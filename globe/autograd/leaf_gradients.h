// The gradient's route to its leaf, in four verbs: the one interface the autograd engine declares
// and the global layer implements (globe/global/leaf_gradients.cpp). The engine computes terms
// and hands them over; what becomes of them (boxed to the leaf's layout, or kept as a partial sum
// and reduced in a bucket while the backward goes on) is the implementation's policy, and so is
// the state it keeps per leaf beside the gradient (TensorImpl::grad_state, opaque to core).
//
//   accumulate  a term of `leaf`'s gradient from backward pass `pass` (any layout)
//   ready       after each node of a pass: the leaves whose last term of the pass it gave (often
//               none); reductions waiting for them may start, those in flight move on
//   pass_done   the pass ended: reductions still collecting start
//   read        the gradient in the leaf's layout (Tensor::grad(), once the engine has run its
//               paused passes)
//
// The engine calls them at the same points on every rank (every rank runs the same graph).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "globe/autograd/tree_accumulator.h"
#include "globe/core/tensor.h"

namespace globe {

// What an implementation keeps beside a leaf's gradient (TensorImpl::grad_state): deterministic
// mode's terms here, more in an implementation's own kind (the global layer's: whether the
// gradient is pending).
struct LeafGradState {
  virtual ~LeafGradState() = default;
  GradTerms terms;
};

class LeafGradients {
 public:
  virtual ~LeafGradients() = default;
  // The local route: the term is added as it comes (checked against the leaf's shape, cast to its
  // dtype; in deterministic mode in the tree over passes, autograd/tree_accumulator.h).
  virtual void accumulate(const Tensor& leaf, const Tensor& term, uint64_t pass);
  virtual void ready(std::span<const Tensor> leaves) {}
  virtual void pass_done() {}
  virtual Tensor read(const Tensor& leaf) { return Tensor(leaf.impl().grad); }

 protected:
  // For implementations, which decide the layout and leave the adding to these. sum_with: the
  // leaf's gradient plus `term` (shape checked, cast to the leaf's dtype), as the mode adds it;
  // keep: `sum` becomes the leaf's gradient.
  static Tensor sum_with(const Tensor& leaf, Tensor term, uint64_t pass);
  static void keep(const Tensor& leaf, const Tensor& sum);
  // The leaf's state as `State`, made when it has none or another implementation's (one installed
  // since: its terms carry over).
  template <class State>
  static State& state_of(const Tensor& leaf) {
    std::shared_ptr<LeafGradState>& held = leaf.impl().grad_state;
    if (auto* mine = dynamic_cast<State*>(held.get())) return *mine;
    auto made = std::make_shared<State>();
    if (held) made->terms = std::move(held->terms);
    held = made;
    return *made;
  }
};

// The installed implementation: the local one above until the global layer installs its own
// (detail::install_hooks).
LeafGradients& leaf_gradients();
void set_leaf_gradients(LeafGradients* gradients);

}  // namespace globe
