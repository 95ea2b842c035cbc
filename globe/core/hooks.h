// What the global layer lends core: the table of functions core calls on global tensors, without
// depending on the layer above. Filled by globe/global/hooks.cpp (install_hooks); until then each
// entry is the local behaviour or an error, so no call site needs a null check.
#pragma once

#include <string>

#include "globe/core/tensor.h"

namespace globe::detail {

struct CoreHooks {
  // The whole logical value of a global tensor as a local tensor (collective).
  Tensor (*whole_value)(const Tensor&) = [](const Tensor&) -> Tensor {
    GLOBE_FAIL("[to_vector] a global tensor, but the global layer's hooks are not installed");
  };
  // "placement(cpu, [0, 1]), sbp=(S(0))" for a global tensor.
  std::string (*describe_layout)(const Tensor&) = [](const Tensor&) { return std::string(); };
  // The device of a global tensor's shard on this rank (its placement's device type).
  Device (*shard_device)(const Tensor&) = [](const Tensor&) -> Device {
    GLOBE_FAIL("[device] a global tensor, but the global layer's hooks are not installed");
  };
  // Tensor::grad(): paused backward passes finished, then the gradient read through the
  // gradients' route (autograd's read_grad, installed with the global layer, which is what
  // pauses passes and keeps gradients pending).
  Tensor (*read_grad)(const Tensor& leaf) = [](const Tensor& leaf) { return Tensor(leaf.impl().grad); };
};
inline CoreHooks core_hooks;

}  // namespace globe::detail
