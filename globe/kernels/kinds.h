// The op kinds that key the per-device kernel tables (device_kernels.h): one enum per family, the
// same on every device, as OneFlow's primitives are keyed by an op enum.
#pragma once

namespace globe::kernels {

enum class UnaryKind { neg, exp, log, sqrt, relu, gelu, tanh, sigmoid, gelu_tanh };

// The *_grad kinds are the backward kernels of unary ops: f(grad, saved input or output).
enum class BinaryKind { add, sub, mul, div, relu_grad, gelu_grad, tanh_grad, sigmoid_grad, gelu_tanh_grad };

// x + s, x * s, x ^ s with a scalar s.
enum class ScalarKind { add, mul, pow };

// One SGD step's constants (torch's SGD): p -= lr * d with d = g + wd * p, through the momentum
// buffer when momentum > 0 (buf = d on the first step, else momentum * buf + (1 - dampening) * d;
// nesterov: d + momentum * buf).
struct SgdStep {
  double lr = 0, weight_decay = 0, momentum = 0, dampening = 0;
  bool nesterov = false, first = false;
};

// One Adam / AdamW step's constants (torch's formulas): m = b1 m + (1 - b1) g, v = b2 v +
// (1 - b2) g^2, p -= step_size * m / (sqrt(v) / bc2_sqrt + eps). AdamW (decoupled) first scales p
// by decay = 1 - lr * wd; Adam adds wd * p to g.
struct AdamStep {
  double beta1 = 0, beta2 = 0, step_size = 0, decay = 1, bc2_sqrt = 1, eps = 0, weight_decay = 0;
  bool decoupled = false;
};

const char* unary_name(UnaryKind k);
const char* binary_name(BinaryKind k);
const char* scalar_name(ScalarKind k);

}  // namespace globe::kernels
