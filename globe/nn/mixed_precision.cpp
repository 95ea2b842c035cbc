#include "globe/nn/mixed_precision.h"

#include "globe/global/grad_buckets.h"

namespace globe::nn {

namespace {
void mark(Module& m, DType dtype) {
  m.set_compute_dtype(dtype);
  for (auto& [name, child] : m.named_children()) mark(*child, dtype);
}
}  // namespace

void mixed_precision(Module& root, const MixedPrecision& policy) {
  for (DType t : {policy.param_dtype, policy.reduce_dtype})
    GLOBE_CHECK(t == kFloat32 || is_reduced_precision(t), "[mixed_precision] dtypes are float32, bfloat16 or float16, got ",
                dtype_name(t));
  for (const auto& [name, p] : root.named_parameters())
    GLOBE_CHECK(p.dtype() == kFloat32, "[mixed_precision] parameter ", name, " is ", dtype_name(p.dtype()),
                ": the master weights must be float32");
  mark(root, policy.param_dtype);
  set_grad_reduce_dtype(policy.reduce_dtype == kFloat32 ? std::nullopt : std::optional<DType>(policy.reduce_dtype));
}

std::string describe(const MixedPrecision& policy) {
  return std::string(dtype_name(policy.param_dtype)) + " compute, float32 master weights, gradients reduced in " +
         dtype_name(policy.reduce_dtype);
}

}  // namespace globe::nn
