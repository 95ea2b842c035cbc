// Deterministic mode's sum of a sequence of terms whose count is not known in advance: a leaf's
// gradients over backward calls (one per micro-batch), a pipeline step's micro-batch losses
// (core/deterministic.h). Adding term after term in order would make the bits depend on the
// count; a binary counter instead keeps one subtree per set bit of the count so far (2^j
// consecutive terms each, added pairwise, largest and earliest first), and the value adds them
// from the last to the first. For a count of 2^j that is the complete pairwise tree
// (kernels/tree_order.h), so m micro-batches of a batch, each a whole subtree of the batch's
// leaves, add up to the bits of the batch taken at once.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "globe/core/tensor.h"

namespace globe {

class TreeAccumulator {
 public:
  // Adds the next term (the same shape as the others; any layout add takes).
  void add(const Tensor& term);
  // The sum of the terms so far (undefined before the first).
  Tensor value() const;
  int64_t count() const { return count_; }

 private:
  std::vector<std::pair<int64_t, Tensor>> subtrees_;  // (terms in it, its sum), sizes falling
  int64_t count_ = 0;
};

// A leaf's gradient terms in deterministic mode (LeafGradState::terms, autograd/leaf_gradients.h).
// A leaf used more than once in a forward (a tied weight) gets one term per use in each backward
// pass, always in the same order: each use keeps its own accumulator, so that every use's terms
// add in the tree over micro-batches, and the gradient is the uses' sums added in use order (one
// pass: term after term, as outside the mode). When the leaf's gradient is anything but the one
// these terms last produced (zeroed, set, boxed to the leaf's layout or reduced in a bucket
// since), the sum starts again from that gradient as the first use's term.
class GradTerms {
 public:
  // `grad` (the leaf's gradient now; undefined for none) plus `term`, a term of backward pass `pass`.
  Tensor add(const Tensor& grad, const Tensor& term, uint64_t pass);
  // `grad` is the leaf's gradient now: what add() returned, maybe boxed.
  void kept(const Tensor& grad) { grad_ = grad.impl_ptr(); }

 private:
  std::vector<TreeAccumulator> uses_;
  uint64_t pass_ = 0;    // the backward pass (autograd/engine.h) the last term came in
  size_t next_use_ = 0;  // the next term's use in that pass
  std::weak_ptr<TensorImpl> grad_;
};

}  // namespace globe
