// ZeRO-3 / fully sharded parameters for one module, as PyTorch's fully_shard (FSDP2):
//
//   for (auto& block : model.blocks) nn::fully_shard(*block);   // after to_global / distribute
//   optim::AdamW opt(model.parameters(), ...);                  // updates the shards
//
// Each parameter of the module lives in ZeRO's layout (global/zero_layout.h: split over the mesh
// axes where it was broadcast, nested inside tensor-parallel splits), 1/n of it per rank between
// uses. Calling the module gathers every parameter to the layout it had (an all-gather each),
// runs forward on the whole values and puts the shards back in the module; the backward
// reduce-scatters each parameter's gradient straight into its shard (the gather is a
// to_global(..., grad_sbp) in the graph, docs/design.md §6). The optimizer then updates shards
// only: its state and the gradients are 1/n too, at any ZeRO stage.
//
// The gathered copies' bytes are released when the module's forward returns, and gathered again
// by the autograd engine before the first backward node that reads them, released after the last
// (PyTorch's reshard_after_forward=True; Storage::remake). With the module also marked for
// recomputation (UnaryModule::set_recompute) the gather is part of the recomputed region instead.
// Either way the backward gathers the parameters as they are then: they must not change between a
// forward and its backward (an optimizer step in between would give gradients of other weights;
// Globe keeps no version counters to catch it).
#pragma once

#include <functional>

#include "globe/nn/module.h"

namespace globe::nn {

// Collective over the module's placement. Every parameter must be global; buffers stay as they are.
// A parameter that no mesh axis can split (too few rows) stays whole. The parameters keep their
// identity (Tensor::rebind, as Module::to_global): an optimizer made before keeps updating them,
// its state following their new layout at its next step. A UnaryModule gathers when called; any
// other module (a Python one) runs its forward inside with_parameters_in_use (nn/parameter_use.h).
void fully_shard(Module& module);

}  // namespace globe::nn
