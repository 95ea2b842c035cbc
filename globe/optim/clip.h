// Training utilities for gradients and the learning rate.
#pragma once

#include <vector>

#include "globe/core/tensor.h"

namespace globe::optim {

// torch.nn.utils.clip_grad_norm_: the 2-norm of all the parameters' gradients taken together; if it
// exceeds `max_norm`, every gradient is scaled by max_norm / (norm + 1e-6). Returns the norm
// (before clipping). Works for gradients of any layout and placement — split shards are counted
// once each, broadcast values once, partial sums reduced first — with one all-reduce of a single
// number over the world, so every rank gets the same norm and the same scale. Collective.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

// The 2-norm of all the parameters' gradients taken together, as clip_grad_norm computes it
// (the same on every rank; inf or NaN when any gradient holds one). Collective.
double grad_norm(const std::vector<Tensor>& params);

// Every defined gradient of `params` multiplied by `factor`, in place (no communication).
void scale_grads(const std::vector<Tensor>& params, double factor);

// nanoGPT's learning rate: linear warm-up over the first `warmup` steps (step s gets
// max_lr (s + 1) / (warmup + 1)), then a cosine from max_lr down to min_lr at `decay_steps`, then
// min_lr.
double warmup_cosine_lr(int64_t step, int64_t warmup, int64_t decay_steps, double max_lr, double min_lr);

}  // namespace globe::optim
