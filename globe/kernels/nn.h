// Kernels behind the neural-network functions.
#pragma once

#include "globe/core/tensor.h"

namespace globe::kernels {

// Softmax (or log-softmax) along `dim`, numerically stable (max subtracted).
Tensor softmax(const Tensor& a, int64_t dim, bool log);
// weight [V, D], indices [...] -> [..., D]. A table holding only rows [first, first + rows) of a
// `vocab`-row table returns zeros for indices it does not hold (vocab-parallel embedding).
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t first = 0, int64_t vocab = -1);
// grad [..., D], indices [...] -> [V, D] with rows summed per index.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t vocab);

}  // namespace globe::kernels
