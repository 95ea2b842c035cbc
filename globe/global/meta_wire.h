// One tensor's metadata as a fixed run of int64 words, for the exchanges between ranks that carry
// it: to_global's gather of the members' shard shapes and the pipeline's transfer header. One
// format and one limit (kMaxDims, core/shape.h; NdSbp::kMaxMeshAxes):
//
//   [present, dtype, ndim, shape[kMaxDims], mesh axes, (kind, dim) per mesh axis]
//
// `present` is 1 in every encoded record, so a row left zero (a rank that sent none) reads as absent.
#pragma once

#include <cstdint>
#include <vector>

#include "globe/core/dtype.h"
#include "globe/core/sbp.h"
#include "globe/core/shape.h"

namespace globe::wire {

inline constexpr int64_t kWords = 3 + kMaxDims + 1 + 2 * int64_t(NdSbp::kMaxMeshAxes);

struct Meta {
  bool present = false;
  DType dtype = DType::float32;
  Shape shape;
  NdSbp sbp;
};

// The record of (dtype, shape, sbp); `op` names the caller in the error past the limits.
std::vector<int64_t> encode(DType dtype, const Shape& shape, const NdSbp& sbp, const char* op);
// The record at `words` (kWords of them).
Meta decode(const int64_t* words);

}  // namespace globe::wire
