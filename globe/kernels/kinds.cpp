#include "globe/kernels/kinds.h"

#include "globe/base/error.h"

namespace globe::kernels {

const char* unary_name(UnaryKind k) {
  switch (k) {
    case UnaryKind::neg: return "neg";
    case UnaryKind::exp: return "exp";
    case UnaryKind::log: return "log";
    case UnaryKind::sqrt: return "sqrt";
    case UnaryKind::relu: return "relu";
    case UnaryKind::gelu: return "gelu";
    case UnaryKind::tanh: return "tanh";
    case UnaryKind::sigmoid: return "sigmoid";
    case UnaryKind::gelu_tanh: return "gelu_tanh";
    case UnaryKind::silu: return "silu";
  }
  GLOBE_FAIL("[unary] unknown kind ", int(k));
}

const char* binary_name(BinaryKind k) {
  switch (k) {
    case BinaryKind::add: return "add";
    case BinaryKind::sub: return "sub";
    case BinaryKind::mul: return "mul";
    case BinaryKind::div: return "div";
    case BinaryKind::relu_grad: return "relu_grad";
    case BinaryKind::gelu_grad: return "gelu_grad";
    case BinaryKind::tanh_grad: return "tanh_grad";
    case BinaryKind::sigmoid_grad: return "sigmoid_grad";
    case BinaryKind::gelu_tanh_grad: return "gelu_tanh_grad";
    case BinaryKind::silu_grad: return "silu_grad";
    case BinaryKind::swiglu: return "swiglu";
  }
  GLOBE_FAIL("[binary] unknown kind ", int(k));
}

const char* scalar_name(ScalarKind k) {
  switch (k) {
    case ScalarKind::add: return "add_scalar";
    case ScalarKind::mul: return "mul_scalar";
    case ScalarKind::pow: return "pow";
  }
  GLOBE_FAIL("[scalar] unknown kind ", int(k));
}

const char* compare_name(CompareKind k) {
  switch (k) {
    case CompareKind::eq: return "eq";
    case CompareKind::ne: return "ne";
    case CompareKind::lt: return "lt";
    case CompareKind::le: return "le";
    case CompareKind::gt: return "gt";
    case CompareKind::ge: return "ge";
  }
  GLOBE_FAIL("[compare] unknown kind ", int(k));
}

const char* random_name(RandomKind k) {
  switch (k) {
    case RandomKind::normal: return "randn";
    case RandomKind::uniform: return "rand";
    case RandomKind::randint: return "randint";
    case RandomKind::dropout_mask: return "dropout";
  }
  GLOBE_FAIL("[random] unknown kind ", int(k));
}

}  // namespace globe::kernels
