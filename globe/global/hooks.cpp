#include "globe/global/hooks.h"

#include "globe/autograd/engine.h"
#include "globe/autograd/leaf_gradients.h"
#include "globe/core/hooks.h"
#include "globe/dist/runtime.h"
#include "globe/global/global_tensor.h"
#include "globe/global/leaf_gradients.h"
#include "globe/ops/hooks.h"

namespace globe::detail {

void install_hooks() {
  static const bool once = [] {
    core_hooks.whole_value = whole_value;
    core_hooks.describe_layout = describe_layout;
    core_hooks.read_grad = read_grad;
    core_hooks.shard_device = shard_device;
    ops_hooks.dispatch_global = dispatch_global;
    ops_hooks.copy_global = copy_global;
    ops_hooks.full_like_global = full_like_global;
    ops_hooks.fill_like_global = fill_like_global;
    ops_hooks.axis_ranks = [](const Tensor& t, size_t axis) { return t.placement().mesh_shape()[axis]; };
    ops_hooks.holds_shard = [](const Tensor& t) { return t.placement().contains(dist::world_rank()); };
    set_leaf_gradients(&global_leaf_gradients());
    return true;
  }();
  (void)once;
}

}  // namespace globe::detail
