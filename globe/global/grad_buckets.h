// Settling many parameters' gradients at once: data-parallel reductions in buckets.
//
// A gradient that is a partial sum where its parameter is broadcast (data parallelism) waits
// unreduced until it is read (docs/DECISIONS.md, "Autograd"). Read one by one, each parameter
// costs its own all-reduce; settle_grads() reduces every waiting gradient that shares a
// placement, dtype and layout change with one flat all-reduce per mesh axis, as DDP's buckets do.
// Optimizers and clip_grad_norm call it before they read gradients. Collective.
#pragma once

#include <vector>

#include "globe/core/tensor.h"

namespace globe {

void settle_grads(const std::vector<Tensor>& params);

// The gradient of `param` as backward left it when its reduction waits (partial_sum where the
// parameter is broadcast), else undefined; the parameter then holds no gradient, and the caller
// reduces this one into a layout of its choice (ZeRO stage 2: a reduce-scatter, not an
// all-reduce). Finishes paused backward passes first; no communication of its own.
Tensor take_waiting_grad(const Tensor& param);

}  // namespace globe
