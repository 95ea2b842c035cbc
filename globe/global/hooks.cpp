#include "globe/global/hooks.h"

#include "globe/autograd/engine.h"
#include "globe/autograd/grad_route.h"
#include "globe/core/hooks.h"
#include "globe/global/global_tensor.h"
#include "globe/global/grad_buckets.h"
#include "globe/ops/hooks.h"

namespace globe::detail {

namespace {

// The gradient's route through the global layer: boxing to the leaf's layout, pending partial
// sums, and their reductions in buckets (grad_buckets.cpp).
class GlobalGradRoute final : public GradRoute {
 public:
  Tensor to_leaf_layout(const Tensor& grad, const Tensor& leaf) override { return grad_to_leaf_layout(grad, leaf); }
  bool may_stay_pending(const Tensor& grad, const Tensor& leaf) override {
    return detail::may_stay_pending(grad, leaf);
  }
  void grad_ready(const Tensor& leaf) override { detail::grad_ready(leaf); }
  void backward_done() override { detail::backward_done(); }
  void progress() override { progress_reductions(); }
  void finish(const Tensor& leaf) override { finish_reduction(leaf); }
  void finish_all() override { finish_reductions(); }
};

}  // namespace

void install_hooks() {
  static const bool once = [] {
    core_hooks.whole_value = whole_value;
    core_hooks.describe_layout = describe_layout;
    core_hooks.resolve_pending_grad = resolve_pending_grad;
    core_hooks.shard_device = shard_device;
    core_hooks.storage_of = [](const Tensor& t) -> Storage* {
      return t.is_global() ? shard_of(t).impl().storage.get() : t.impl().storage.get();
    };
    ops_hooks.dispatch_global = dispatch_global;
    ops_hooks.copy_global = copy_global;
    ops_hooks.full_like_global = full_like_global;
    ops_hooks.fill_like_global = fill_like_global;
    ops_hooks.axis_ranks = [](const Tensor& t, size_t axis) { return t.placement().mesh_shape()[axis]; };
    static GlobalGradRoute route;
    set_grad_route(&route);
    return true;
  }();
  (void)once;
}

}  // namespace globe::detail
