// How a module's forward sees its own parameters, when it is marked to see them otherwise than as
// stored: gathered whole (ZeRO-3, nn/fully_shard.h) and cast to a compute dtype (mixed precision,
// nn/mixed_precision.h), in that order. Each is an op in the graph (to_global with a grad_sbp,
// to_dtype), so the gradient comes back through both to the stored parameter: reduce-scattered
// into the shard, widened to the parameter's float32.
#pragma once

#include <functional>

#include "globe/nn/module.h"

namespace globe::nn {

// run() with each of `module`'s own parameters replaced in its slot by the value its forward uses
// (gathered and/or cast as the module's marks say), the stored parameters put back after, an
// exception included. UnaryModule::operator() and Python's Module.__call__ use it. A gathered
// copy's bytes are released when run() returns and made again by the autograd engine before the
// first backward node that reads them (PyTorch FSDP's reshard_after_forward; nn/remade_storage.h).
Tensor with_parameters_in_use(Module& module, const std::function<Tensor()>& run);

// `x` as a module with a compute dtype takes its input: cast to it when floating (FSDP2's
// cast_forward_inputs); `x` itself otherwise.
Tensor cast_input(const Module& module, const Tensor& x);

}  // namespace globe::nn
