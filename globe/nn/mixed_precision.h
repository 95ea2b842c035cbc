// Mixed precision as a policy over a model, as PyTorch FSDP2's MixedPrecisionPolicy:
//
//   nn::mixed_precision(model, {.param_dtype = kBFloat16});   // float32 master weights stay
//   optim::AdamW opt(model.parameters(), ...);                // float32 state, float32 updates
//
// Every module under the root keeps its parameters in float32 (the master copy the optimizer
// updates) and, while it runs, sees them cast to param_dtype, its floating inputs too; kernels
// compute bfloat16 in float32 and round each result once (kernels/via_float32.h). The casts are
// ops in the graph, so each gradient comes back widened to float32 before it is summed across
// data-parallel ranks: the reduction runs in float32 unless reduce_dtype asks for bfloat16 (said
// in the log: on many ranks bfloat16 sums lose the small gradients, pytorch#106395). With
// fully_shard the parameter is gathered first, then cast. The reduce dtype is the process's
// (set_grad_reduce_dtype, global/grad_buckets.h): the last policy applied sets it. docs/design.md §17.
#pragma once

#include <string>

#include "globe/nn/module.h"

namespace globe::nn {

struct MixedPrecision {
  DType param_dtype = kBFloat16;  // what forward and backward compute in
  DType reduce_dtype = kFloat32;  // what the data-parallel gradient all-reduce sums in
};

// Marks `root` and every module under it. float32, bfloat16 or float16 (with optim::GradScaler:
// float16 needs the loss scaled); the parameters must be
// float32. Collective only in that every rank must apply the same policy.
void mixed_precision(Module& root, const MixedPrecision& policy);

// One line for logs: "bfloat16 compute, float32 master weights, gradients reduced in float32".
std::string describe(const MixedPrecision& policy);

}  // namespace globe::nn
