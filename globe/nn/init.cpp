#include "globe/nn/init.h"

#include <cmath>

#include "globe/ops/ops.h"

namespace globe::nn::init {

Tensor linear_uniform(const Shape& shape, int64_t fan_in) {
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
  return uniform(shape, -bound, bound);
}

}  // namespace globe::nn::init
