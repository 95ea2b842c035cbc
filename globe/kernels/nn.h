// Kernels behind the neural-network functions.
#pragma once

#include "globe/core/tensor.h"

namespace globe::kernels {

// Softmax (or log-softmax) along `dim`, numerically stable (max subtracted).
Tensor softmax(const Tensor& a, int64_t dim, bool log);
// weight [V, D], indices [...] -> [..., D].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// grad [..., D], indices [...] -> [V, D] with rows summed per index.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t vocab);

}  // namespace globe::kernels
