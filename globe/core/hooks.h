// Extension points that let higher layers (global tensors) plug into core operations without core
// depending on them.
#pragma once

#include <string>

#include "globe/core/tensor.h"

namespace globe::detail {

// Installed by the global layer: the whole logical value of a global tensor as a local tensor
// (collective), and a text describing its layout ("placement=..., sbp=(S(0),)").
extern Tensor (*g_global_to_full_local)(const Tensor&);
extern std::string (*g_describe_layout)(const Tensor&);
// Installed by autograd on the first backward: a leaf's gradient made ready to read (paused
// backward passes finished, a deferred reduction done).
extern Tensor (*g_settle_grad)(const Tensor& leaf);

}  // namespace globe::detail
