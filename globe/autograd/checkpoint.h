// Activation recomputation (activation checkpointing): a region of the forward keeps none of its
// intermediate tensors; its backward runs the region's forward again and differentiates that.
//
//   Tensor y = globe::checkpoint([&block](const std::vector<Tensor>& in) { return block(in[0]); },
//                                {x}, "transformer.h.3");
//   // or mark a module: block.set_recompute(true) (nn::UnaryModule)
//
// What the region reads is found, not listed: the forward runs once with the graph recorded, and
// every tensor that requires grad and that the region's graph reaches from outside it (its inputs,
// the parameters of the modules it calls, tensors it captured) becomes an input of one node that
// replaces the region's graph; the region's own graph is then dropped. Its backward sets the random
// generator back to where the forward found it (dropout draws the same masks), runs `fn` again with
// the graph recorded, checks that it recorded the same ops on the same inputs, and returns the
// gradients of those inputs (engine.h `gradients`). So the gradients equal those of the region run
// without recomputation bit for bit: the same kernels on the same values, summed in the same order
// (docs/design.md §6).
//
// `fn` is called again during backward: what it captures must still be alive then (capture tensors
// and modules by value or by a reference that outlives the backward, never a local by reference).
// A region must not change state the recomputation would change again (a buffer updated in place)
// or read values that change before the backward (host state, a tensor modified in place); what
// Globe can check — the ops recorded and the tensors they read — it checks, and a difference is an
// error naming the region.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "globe/core/tensor.h"

namespace globe {

using RegionFn = std::function<Tensor(const std::vector<Tensor>&)>;

// fn(inputs), recomputed in the backward instead of stored. `name` labels errors. Without grad
// mode (or when nothing in the region requires grad) it is just fn(inputs).
Tensor checkpoint(const RegionFn& fn, const std::vector<Tensor>& inputs, const std::string& name = "checkpoint");

// Whether this thread is running a region's forward again, for its backward (a fully sharded
// module then keeps its gathered parameters: the region's backward reads them at once).
bool recomputing();

}  // namespace globe
