// Data-parallel gradient reductions in buckets, overlapped with the backward pass.
//
// A gradient that is a partial sum where its parameter is broadcast (data parallelism) stays
// pending, unreduced (docs/DECISIONS.md, "Autograd"). During backward, as soon as such a gradient is
// complete (no later node of the pass adds to it) it joins an open bucket of gradients that need
// the same reduction (placement, dtype, layout change); a bucket that reaches the bucket size
// starts its all-reduce, non-blocking, at once, and the end of the pass starts the rest. The
// engine moves reductions in flight on between nodes; reading or adding to a gradient completes
// them (docs/design.md §11, "Overlap"). Every rank runs the same graph, so buckets start in the same order
// everywhere. Gradients still pending when read (overlap off, NoSyncGuard) are reduced by
// resolve_pending_grads(), again one all-reduce per bucket. ZeRO stage 2's parameters take no
// bucket: each gradient is reduce-scattered into its update layout as it completes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "globe/core/tensor.h"

namespace globe {

// What an optimizer or clip_grad_norm calls before reading the gradients of `params`: reductions
// in flight complete, then every gradient still pending (grad(), global/leaf_gradients.h) is
// reduced: into `reduce_into(param)` where given and another layout than the parameter's (ZeRO
// stage 2: a reduce-scatter into the update layout, the whole partial gradient let go), the others
// in one flat all-reduce per group that shares a reduction. Backward passes still paused
// (autograd/engine.h) must be finished first (finish_backward): they may add to these gradients;
// an error says so. Collective.
void resolve_pending_grads(const std::vector<Tensor>& params,
                           const std::function<NdSbp(const Tensor&)>& reduce_into = {});

// Bytes of gradients a bucket collects before its reduction starts (default 4 MiB, env
// GLOBE_BUCKET_MB; bench/RESULTS.md, "Overlap"). 0 turns overlap off: gradients stay pending until read.
// Every rank must use the same size.
void set_grad_bucket_bytes(int64_t bytes);
int64_t grad_bucket_bytes();

// The dtype the bucketed data-parallel all-reduce sums gradients in: nullopt (the default) sums
// each in its own dtype; bfloat16 rounds a float32 bucket to bfloat16 for the all-reduce (half
// the bytes) and widens the sums back (mixed precision's reduce_dtype, nn/mixed_precision.h).
// ZeRO's reduce-scatters are not bucketed and keep the gradients' dtype. Every rank must agree.
void set_grad_reduce_dtype(std::optional<DType> dtype);
std::optional<DType> grad_reduce_dtype();

// While one lives, backward passes start no reductions: gradients accumulate unreduced, for one
// reduction per step (gradient accumulation; DDP's no_sync). The pipeline uses it for every
// micro-batch's backward but each stage's last.
class NoSyncGuard {
 public:
  NoSyncGuard();
  ~NoSyncGuard();
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;
};

// ZeRO stage 2 (optim/optimizer.h), with `on`: the gradient of each of `params`, once the backward
// completes it, is reduced straight into the parameter's update layout (zero_layout: P -> S, a
// reduce-scatter moving half an all-reduce's bytes) and the whole partial gradient is let go, so
// after the backward each rank holds 1/n of each gradient (DeepSpeed's stage 2). Where a
// NoSyncGuard holds (gradient accumulation, a pipeline's micro-batches but the last) the whole
// gradient accumulates as in stage 0 and is reduce-scattered at the step's last backward.
void reduce_into_update_layout(const std::vector<Tensor>& params, bool on);

namespace detail {
// The overlap half of the gradient's route (global/leaf_gradients.cpp calls them).
void grad_ready(const Tensor& leaf);
void backward_done();
void progress_reductions();
void finish_reduction(const Tensor& leaf);  // the flights up to the one holding `leaf`
void finish_reductions();
size_t reductions_in_flight();  // started and not yet finished (tests, diagnostics)
}  // namespace detail

}  // namespace globe
