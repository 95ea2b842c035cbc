#include "globe/kernels/cuda/table.h"

#include "globe/kernels/cuda/kernels.h"

namespace globe::kernels::cuda {

const DeviceKernels& table() {
  static const DeviceKernels t{
      .device_name = "cuda",
      .unary = unary,
      .binary = binary,
      .scalar = scalar,
      .compare = compare,
      .clamp = clamp,
      .clamp_backward = clamp_backward,
      .where = where,
      .copy_into = copy_into,
      .fill = fill,
      .sum_to_keepdim = sum_to_keepdim,
      .leaf_tree_sum = leaf_tree_sum,
      .argmax_keepdim = argmax_keepdim,
      .gather = gather,
      .scatter_add = scatter_add,
      .matmul = matmul,
      .fixed_order_gemm = fixed_order_gemm,
      .softmax = softmax,
      .softmax_backward_last = softmax_backward_last,
      .causal_softmax_last = causal_softmax_last,
      .causal_fill = causal_fill,
      .normalize_last = normalize_last,
      .normalize_last_backward = normalize_last_backward,
      .normalize_last_weight_grad = normalize_last_weight_grad,
      .rotary = rotary,
      .embedding = embedding,
      .embedding_backward = embedding_backward,
      .pick = pick,
      .pick_backward = pick_backward,
      .swiglu_backward = swiglu_backward,
      .causal_attention = causal_attention,
      .causal_attention_backward = causal_attention_backward,
      .sgd_update = sgd_update,
      .adam_update = adam_update,
      .sum_of_squares = sum_of_squares,
      .random_fill = random_fill,
      // 16-bit floats: stored, copied and converted here; every other entry takes them through
      // the dispatcher's float32 rule (via_float32.h).
      .native_16bit = entry_bit<&DeviceKernels::copy_into>() | entry_bit<&DeviceKernels::fill>(),
  };
  return t;
}

}  // namespace globe::kernels::cuda
