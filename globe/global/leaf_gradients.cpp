#include "globe/global/leaf_gradients.h"

#include "globe/core/deterministic.h"
#include "globe/core/grad_mode.h"
#include "globe/global/grad_buckets.h"
#include "globe/global/hooks.h"

namespace globe::detail {

namespace {

struct GlobalLeafState : LeafGradState {
  std::weak_ptr<TensorImpl> pending;  // the gradient, when this route left it pending
};

class GlobalLeafGradients final : public LeafGradients {
 public:
  void accumulate(const Tensor& leaf, const Tensor& term, uint64_t pass) override {
    if (grad_pending(leaf)) finish_reduction(leaf);  // its reduction may be in flight
    TensorImpl& impl = leaf.impl();
    // Deterministic mode adds terms in the leaf's layout (the tree's additions then communicate
    // nothing); a first term still pending is boxed to it too. Only a sum may stay pending.
    const bool tree = deterministic();
    Tensor g = term;
    if (!may_stay_pending(g, leaf) || (tree && impl.grad)) g = grad_to_leaf_layout(g, leaf);
    if (tree && grad_pending(leaf)) impl.grad = grad_to_leaf_layout(Tensor(impl.grad), leaf).impl_ptr();
    Tensor sum = sum_with(leaf, g, pass);
    // The sum of two gradients may come out in another layout (add picks its cheapest
    // signature): pending only when it is still a partial sum where the leaf is broadcast.
    const bool pending = may_stay_pending(sum, leaf);
    if (!pending) sum = grad_to_leaf_layout(sum, leaf);
    keep(leaf, sum);
    if (pending) state_of<GlobalLeafState>(leaf).pending = sum.impl_ptr();
  }

  void ready(std::span<const Tensor> leaves) override {
    for (const Tensor& leaf : leaves) grad_ready(leaf);
    progress_reductions();
  }

  void pass_done() override { backward_done(); }

  Tensor read(const Tensor& leaf) override {
    finish_reductions();
    TensorImpl& impl = leaf.impl();
    if (grad_pending(leaf)) {
      NoGradGuard no_grad;
      impl.grad = grad_to_leaf_layout(Tensor(impl.grad), leaf).impl_ptr();
    }
    return Tensor(impl.grad);
  }
};

}  // namespace

LeafGradients& global_leaf_gradients() {
  static GlobalLeafGradients gradients;
  return gradients;
}

bool grad_pending(const Tensor& leaf) {
  const TensorImpl& impl = leaf.impl();
  if (!impl.grad) return false;
  const auto* state = dynamic_cast<const GlobalLeafState*>(impl.grad_state.get());
  return state != nullptr && state->pending.lock() == impl.grad;
}

}  // namespace globe::detail
