// What the global layer lends the ops layer: the table of functions ops call when an input is
// global. Filled by globe/global/hooks.cpp (install_hooks), before any global tensor exists; until
// then every entry is an error, so no call site needs a null check.
#pragma once

#include <functional>
#include <vector>

#include "globe/core/tensor.h"
#include "globe/ops/op.h"

namespace globe::detail {

[[noreturn]] inline void global_layer_missing(const char* op) {
  GLOBE_FAIL("[", op, "] a global tensor, but the global layer's hooks are not installed");
}

struct OpsHooks {
  // Runs an op whose inputs include a global tensor.
  Tensor (*dispatch_global)(const OpPtr& op, const std::vector<Tensor>& inputs) =
      [](const OpPtr& op, const std::vector<Tensor>&) -> Tensor { global_layer_missing(op->name().c_str()); };
  // copy_ when either side is global.
  void (*copy_global)(const Tensor& dst, const Tensor& src) = [](const Tensor&, const Tensor&) {
    global_layer_missing("copy_");
  };
  // zeros_like / ones_like of a global tensor: zeros keep partial_sum, other values are broadcast.
  Tensor (*full_like_global)(const Tensor& t, double value) = [](const Tensor&, double) -> Tensor {
    global_layer_missing("full_like");
  };
  // A global tensor like `t` (partial_sum becoming broadcast) whose shards are written by
  // fill(shard, start of the shard in the logical tensor): for position-keyed random masks.
  Tensor (*fill_like_global)(const Tensor& t, const std::function<void(const Tensor&, const Shape&)>& fill) =
      [](const Tensor&, const std::function<void(const Tensor&, const Shape&)>&) -> Tensor {
    global_layer_missing("fill_like");
  };
  // How many ranks a global tensor's placement has along mesh axis `axis` (an axis of one rank
  // lays nothing out in pieces, whatever its sbp says).
  int64_t (*axis_ranks)(const Tensor& t, size_t axis) = [](const Tensor&, size_t) -> int64_t {
    global_layer_missing("placement");
  };
  // Whether this rank is in a global tensor's placement (outside it, a rank holds an empty shard
  // and takes part in none of the members' communication).
  bool (*holds_shard)(const Tensor& t) = [](const Tensor&) -> bool { global_layer_missing("placement"); };
};
inline OpsHooks ops_hooks;

}  // namespace globe::detail
