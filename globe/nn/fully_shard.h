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
// (PyTorch's reshard_after_forward=True; nn/remade_storage.h). With the module also marked for
// recomputation (UnaryModule::set_recompute) the gather is part of the recomputed region instead.
// reshard_after_forward = false keeps the gathered copies from the forward to the backward instead
// (one gather per step, the whole parameters held in between).
//
// Prefetch (set_prefetch): with the modules' forward order known, calling one starts the gathers
// of the next ones before its own forward runs, and the backward, reaching one module's gathers,
// starts those of the modules it reaches next — so a gather overlaps the compute before it.
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
struct FullyShardOptions {
  // PyTorch's reshard_after_forward: release the gathered copies when the forward returns and
  // gather again for the backward (true), or keep them until the backward is done with them.
  bool reshard_after_forward = true;
};
void fully_shard(Module& module, const FullyShardOptions& options = {});

// ZeRO-3 prefetch over `modules` listed in the order every forward calls them (a stage's blocks):
// calling modules[i] starts the gathers of modules[i+1 .. i+depth] ahead (each lands when its
// module is called), and the backward, when it needs one module call's gathers, starts those of
// the next `depth` module calls it will need. At most depth + 1 modules' parameters are whole at a
// time in either pass. depth 0 (the default without this call) gathers each module when it runs.
// Prefetch changes when gathers run, never their values: training is bit-identical at any depth.
// Collective, like the gathers: every rank lists the same modules. The modules must outlive the
// links, and a forward must call them in this order (a gather started ahead is taken by its
// module's next call; one that a failing forward never reached is dropped).
void set_prefetch(const std::vector<Module*>& modules, int depth);

}  // namespace globe::nn
