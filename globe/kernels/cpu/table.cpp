#include "globe/kernels/cpu/table.h"

#include "globe/kernels/attention.h"
#include "globe/kernels/elementwise.h"
#include "globe/kernels/matmul.h"
#include "globe/kernels/nn.h"
#include "globe/kernels/random_fill.h"
#include "globe/kernels/reduce.h"
#include "globe/kernels/via_float32.h"

namespace globe::kernels::cpu {

// Every entry takes bfloat16 and float16 through its float32 kernel (via_float32.h) but copy_into and fill,
// which convert natively, and matmul, which picks a bf16 GEMM itself.

const DeviceKernels& table() {
  static const DeviceKernels t{
      .device_name = "cpu",
      .unary = via_float32<unary>,
      .binary = via_float32<binary>,
      .scalar = via_float32<scalar>,
      .compare = via_float32<compare>,
      .clamp = via_float32<clamp>,
      .clamp_backward = via_float32<clamp_backward>,
      .where = via_float32<where>,
      .copy_into = kernels::copy_into,
      .fill = fill,
      .sum_to_keepdim = via_float32<kernels::sum_to_keepdim>,
      .argmax_keepdim = via_float32<kernels::argmax_keepdim>,
      .gather = via_float32<kernels::gather>,
      .scatter_add = via_float32<kernels::scatter_add>,
      .matmul = [](const Tensor& a, const Tensor& b, const Shape& out, const Tensor& bias) {
        return kernels::matmul(a, b, out, bias);  // 16-bit floats too (matmul.h)
      },
      .fixed_order_gemm = kernels::fixed_order_gemm,
      .softmax = via_float32<kernels::softmax>,
      .softmax_backward_last = via_float32<kernels::softmax_backward_last>,
      .causal_softmax_last = via_float32<kernels::causal_softmax_last>,
      .causal_fill = via_float32<kernels::causal_fill>,
      .normalize_last = via_float32<kernels::normalize_last>,
      .normalize_last_backward = via_float32<kernels::normalize_last_backward>,
      .normalize_last_weight_grad = via_float32<kernels::normalize_last_weight_grad>,
      .embedding = via_float32<kernels::embedding>,
      .embedding_backward = via_float32<kernels::embedding_backward>,
      .pick = via_float32<kernels::pick>,
      .pick_backward = via_float32<kernels::pick_backward>,
      .causal_attention = via_float32<kernels::causal_attention>,
      .causal_attention_backward = via_float32<kernels::causal_attention_backward>,
      .sgd_update = via_float32<sgd_update>,
      .adam_update = via_float32<adam_update>,
      .sum_of_squares = via_float32<kernels::sum_of_squares>,
      .random_fill = via_float32<kernels::random_fill>,
  };
  return t;
}

}  // namespace globe::kernels::cpu
