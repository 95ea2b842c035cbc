#include "globe/kernels/cpu/table.h"

#include "globe/kernels/cpu/attention.h"
#include "globe/kernels/cpu/elementwise.h"
#include "globe/kernels/cpu/matmul.h"
#include "globe/kernels/cpu/nn.h"
#include "globe/kernels/cpu/random_fill.h"
#include "globe/kernels/cpu/reduce.h"

namespace globe::kernels::cpu {

// The dispatcher takes bfloat16 and float16 through every entry's float32 kernel (via_float32.h)
// but copy_into and fill, which convert natively, matmul, which picks a bf16 GEMM itself, and
// fixed_order_gemm, which is handed float32 (kernels/fixed_order_matmul.cpp widens first).

const DeviceKernels& table() {
  static const DeviceKernels t{
      .device_name = "cpu",
      .unary = unary,
      .binary = binary,
      .scalar = scalar,
      .compare = compare,
      .clamp = clamp,
      .clamp_backward = clamp_backward,
      .where = where,
      .copy_into = kernels::copy_into,
      .fill = fill,
      .sum_to_keepdim = kernels::sum_to_keepdim,
      .leaf_tree_sum = kernels::leaf_tree_sum,
      .argmax_keepdim = kernels::argmax_keepdim,
      .gather = kernels::gather,
      .scatter_add = kernels::scatter_add,
      .matmul = [](const Tensor& a, const Tensor& b, const Shape& out, const Tensor& bias) {
        return kernels::matmul(a, b, out, bias);  // 16-bit floats too (matmul.h)
      },
      .fixed_order_gemm = kernels::fixed_order_gemm,
      .softmax = kernels::softmax,
      .softmax_backward_last = kernels::softmax_backward_last,
      .causal_softmax_last = kernels::causal_softmax_last,
      .causal_fill = kernels::causal_fill,
      .normalize_last = kernels::normalize_last,
      .normalize_last_backward = kernels::normalize_last_backward,
      .normalize_last_weight_grad = kernels::normalize_last_weight_grad,
      .rotary = kernels::rotary,
      .embedding = kernels::embedding,
      .embedding_backward = kernels::embedding_backward,
      .pick = kernels::pick,
      .pick_backward = kernels::pick_backward,
      .swiglu_backward = swiglu_backward,
      .causal_attention = kernels::causal_attention,
      .causal_attention_backward = kernels::causal_attention_backward,
      .sgd_update = sgd_update,
      .adam_update = adam_update,
      .sum_of_squares = kernels::sum_of_squares,
      .random_fill = kernels::random_fill,
      .native_16bit = entry_bit<&DeviceKernels::copy_into>() | entry_bit<&DeviceKernels::fill>() |
                      entry_bit<&DeviceKernels::matmul>() | entry_bit<&DeviceKernels::fixed_order_gemm>(),
  };
  return t;
}

}  // namespace globe::kernels::cpu
