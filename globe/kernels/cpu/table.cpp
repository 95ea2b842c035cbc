#include "globe/kernels/cpu/table.h"

#include "globe/kernels/attention.h"
#include "globe/kernels/elementwise.h"
#include "globe/kernels/matmul.h"
#include "globe/kernels/nn.h"
#include "globe/kernels/random_fill.h"
#include "globe/kernels/reduce.h"

namespace globe::kernels::cpu {

const DeviceKernels& table() {
  static const DeviceKernels t{
      .device_name = "cpu",
      .unary = unary,
      .binary = binary,
      .scalar = scalar,
      .clamp = clamp,
      .clamp_backward = clamp_backward,
      .masked_fill = masked_fill,
      .copy_into = kernels::copy_into,
      .fill = fill,
      .sum_to_keepdim = kernels::sum_to_keepdim,
      .argmax_keepdim = kernels::argmax_keepdim,
      .gather = kernels::gather,
      .scatter_add = kernels::scatter_add,
      .matmul = [](const Tensor& a, const Tensor& b, const Shape& out, const Tensor& bias) {
        return kernels::matmul(a, b, out, bias);
      },
      .softmax = kernels::softmax,
      .softmax_backward_last = kernels::softmax_backward_last,
      .causal_softmax_last = kernels::causal_softmax_last,
      .causal_fill = kernels::causal_fill,
      .normalize_last = kernels::normalize_last,
      .normalize_last_backward = kernels::normalize_last_backward,
      .normalize_last_weight_grad = kernels::normalize_last_weight_grad,
      .embedding = kernels::embedding,
      .embedding_backward = kernels::embedding_backward,
      .pick = kernels::pick,
      .pick_backward = kernels::pick_backward,
      .causal_attention = kernels::causal_attention,
      .causal_attention_backward = kernels::causal_attention_backward,
      .sgd_update = sgd_update,
      .adam_update = adam_update,
      .sum_of_squares = kernels::sum_of_squares,
      .random_fill = kernels::random_fill,
  };
  return t;
}

}  // namespace globe::kernels::cpu
