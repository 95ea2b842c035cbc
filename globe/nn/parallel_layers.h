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

}  // namespace globe::nn
