// Parameter initialisation, matching PyTorch's defaults. Uses the seeded global generator, so
// every rank builds identical parameters.
#pragma once

#include "globe/core/tensor.h"

namespace globe::nn::init {

// U(-1/sqrt(fan_in), 1/sqrt(fan_in)): torch's kaiming_uniform_(a=sqrt(5)) for Linear weights
// reduces to exactly this bound, and so does its bias init.
Tensor linear_uniform(const Shape& shape, int64_t fan_in);

}  // namespace globe::nn::init
