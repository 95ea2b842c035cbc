// Tensor-parallel layers (Megatron style), built from an ordinary Linear initialisation and laid
// out with Module::distribute, so a model gives the same numbers on any number of ranks.
//
//   nn::ColumnParallelLinear fc1(1024, 4096, p);  // weight S(0): each rank computes some outputs
//   nn::RowParallelLinear fc2(4096, 1024, p);     // weight S(1): partial sums, reduced when needed
//   Tensor y = fc2(gelu(fc1(x)));                 // x broadcast -> hidden S(-1) -> y partial_sum
//
// On an N-D mesh the tensor-parallel axis is `tp_axis` (default: the last); other axes hold
// copies (broadcast), e.g. data parallel along axis 0.
#pragma once

#include "globe/nn/layers.h"

namespace globe::nn {

// Output features split: weight [out, in] S(0), bias S(0); the output's last dim is split.
class ColumnParallelLinear : public Linear {
 public:
  ColumnParallelLinear(int64_t in_features, int64_t out_features, const Placement& placement, bool bias = true,
                       int64_t tp_axis = -1);
};

// Input features split: weight [out, in] S(1), bias broadcast; expects its input split on the
// last dim and returns partial sums (plus the bias once).
class RowParallelLinear : public Linear {
 public:
  RowParallelLinear(int64_t in_features, int64_t out_features, const Placement& placement, bool bias = true,
                    int64_t tp_axis = -1);
};

// The N-D SBP that is `s` on mesh axis `axis` (negative counts from the end) and broadcast on the
// others.
NdSbp on_axis(const Placement& placement, int64_t axis, const Sbp& s);

// Megatron's two operators around a tensor-parallel region, on mesh axis `tp_axis`; a local tensor
// passes through both unchanged.
// After a row-parallel layer (or a vocabulary-parallel embedding): its partial sums all-reduced
// (made broadcast on the axis), so the residual stream stays replicated and the next
// column-parallel layer runs on its own weight block. Left to itself, the layout deduction may
// reduce-scatter instead and then gather the next weights.
Tensor reduce_over_tp(const Tensor& t, int64_t tp_axis = -1);
// At the input of a column-parallel layer (or a vocabulary-parallel head): broadcast on the axis
// going forward; coming back, the gradient (a partial sum of the ranks' column blocks) is
// all-reduced here, so everything before the region sees a replicated gradient.
Tensor enter_tp_region(const Tensor& t, int64_t tp_axis = -1);

}  // namespace globe::nn
