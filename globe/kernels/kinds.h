// The op kinds that key the per-device kernel tables (device_kernels.h): one enum per family, the
// same on every device, as OneFlow's primitives are keyed by an op enum.
#pragma once

#include <cstdint>

namespace globe::kernels {

enum class UnaryKind { neg, exp, log, sqrt, relu, gelu, tanh, sigmoid, gelu_tanh, silu };

// The *_grad kinds are the backward kernels of unary ops: f(grad, saved input or output).
// swiglu(a, b) = silu(a) * b (Llama's MLP gate), a differentiable kind like the arithmetic.
enum class BinaryKind { add, sub, mul, div, relu_grad, gelu_grad, tanh_grad, sigmoid_grad, gelu_tanh_grad, silu_grad, swiglu };

// Elementwise comparisons: a == b, a != b, a < b, a <= b, a > b, a >= b, each giving a bool.
enum class CompareKind { eq, ne, lt, le, gt, ge };

// x + s, x * s, x ^ s with a scalar s.
enum class ScalarKind { add, mul, pow };

// The random fills (kernels/cpu/random_fill.h describes each): randn's standard normals, rand's /
// uniform's [low, high), randint's int64 [int_low, int_high), dropout's keep-mask of drop
// probability p. Each draws from the logical position only (core/philox.h).
enum class RandomKind { normal, uniform, randint, dropout_mask };

// A random fill's parameters; each kind reads its own.
struct RandomParams {
  double low = 0, high = 1;           // uniform
  int64_t int_low = 0, int_high = 1;  // randint
  double p = 0;                       // dropout_mask
};

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
const char* compare_name(CompareKind k);
// The op a random kind serves, for errors: randn, rand, randint, dropout.
const char* random_name(RandomKind k);

}  // namespace globe::kernels
