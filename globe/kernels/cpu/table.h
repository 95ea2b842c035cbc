// The CPU's kernel table (device_kernels.h) and the entries written for it here. Included only by
// kernels/device_kernels.cpp and the CPU table's own sources.
#pragma once

#include "globe/kernels/device_kernels.h"

namespace globe::kernels::cpu {

const DeviceKernels& table();

// elementwise_ops.cpp
Tensor unary(UnaryKind kind, const Tensor& a);
Tensor binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& out);
// swiglu(gate, up) = silu(gate) * up's backward in one pass: g, gate, up of one shape -> [2, ...]
// holding g * up * silu'(gate), then g * silu(gate).
Tensor swiglu_backward(const Tensor& g, const Tensor& gate, const Tensor& up);
Tensor scalar(ScalarKind kind, const Tensor& a, double s);
void fill(const Tensor& dst, double value);
Tensor clamp(const Tensor& a, double lo, double hi);
Tensor clamp_backward(const Tensor& g, const Tensor& x, double lo, double hi);
Tensor compare(CompareKind kind, const Tensor& a, const Tensor& b, const Shape& out);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Shape& out);
// optim_updates.cpp
void sgd_update(const Tensor& p, const Tensor& g, const Tensor& momentum_buffer, const SgdStep& step);
void adam_update(const Tensor& p, const Tensor& g, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const AdamStep& step);

}  // namespace globe::kernels::cpu
