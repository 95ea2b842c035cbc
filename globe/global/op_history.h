// The global ops this rank ran, per placement (docs/design.md §9): recorded by dispatch, boxing
// and the collective helpers above them, so every collective they issue carries a fingerprint of
// the whole history (dist/fingerprint.h). Global ops run on one thread per rank.
#pragma once

#include <string_view>
#include <vector>

#include "globe/core/sbp.h"
#include "globe/core/tensor.h"
#include "globe/dist/fingerprint.h"
#include "globe/global/placement.h"

namespace globe {

// Records op `name` on `placement` (`detail`: a hash of what else the ranks must agree on) and
// makes it the op whose fingerprint the collectives issued during the scope's life carry.
class RecordOp {
 public:
  RecordOp(const Placement& placement, std::string_view name, uint32_t detail);
  RecordOp(const RecordOp&) = delete;
  RecordOp& operator=(const RecordOp&) = delete;

 private:
  dist::StampScope scope_;
};

// A hash of tensors' dtypes, shapes and layouts.
uint32_t hash_layouts(const std::vector<Tensor>& tensors, uint32_t h = dist::kMixSeed);
uint32_t hash_layout(const Shape& shape, DType dtype, const NdSbp& layout, uint32_t h = dist::kMixSeed);

}  // namespace globe
