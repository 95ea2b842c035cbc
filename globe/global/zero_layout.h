// ZeRO's layout of a global tensor (docs/design.md §15): the layout optimizer state, gradients
// (stages 1, 2) and parameters (stage 3, nn/fully_shard.h) are split into over the mesh axes where
// the tensor is broadcast.
#pragma once

#include "globe/core/sbp.h"
#include "globe/core/tensor.h"

namespace globe {

// `t`'s SBP with every mesh axis where it is broadcast (size > 1) turned into split(d) — nested
// inside the axes that split that dim already — d the first dim that the ranks divide evenly, else
// the first long enough to give every rank a block; an axis with no such dim stays broadcast. `t`
// must be global.
NdSbp zero_layout(const Tensor& t);

// `t`'s value in layout `sbp`, in a shard of its own (not a view of a larger one): a detached
// tensor whose storage holds this rank's block alone.
Tensor owned_copy(const Tensor& t, const NdSbp& sbp);

}  // namespace globe
