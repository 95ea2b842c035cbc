#include "globe/global/hooks.h"

#include "globe/autograd/engine.h"
#include "globe/autograd/hooks.h"
#include "globe/core/hooks.h"
#include "globe/global/grad_buckets.h"
#include "globe/ops/hooks.h"

namespace globe::detail {

void install_hooks() {
  static const bool once = [] {
    core_hooks.whole_value = whole_value;
    core_hooks.describe_layout = describe_layout;
    core_hooks.settle_grad = settle_grad;
    core_hooks.shard_device = shard_device;
    ops_hooks.dispatch_global = dispatch_global;
    ops_hooks.copy_global = copy_global;
    ops_hooks.full_like_global = full_like_global;
    ops_hooks.fill_like_global = fill_like_global;
    autograd_hooks.grad_to_leaf_layout = grad_to_leaf_layout;
    autograd_hooks.grad_may_wait = grad_may_wait;
    autograd_hooks.grad_ready = grad_ready;
    autograd_hooks.backward_done = backward_done;
    autograd_hooks.progress = progress_reductions;
    autograd_hooks.finish_reduction = finish_reduction;
    autograd_hooks.finish_reductions = finish_reductions;
    return true;
  }();
  (void)once;
}

}  // namespace globe::detail
