// Elementwise ops: unary math, binary arithmetic with broadcasting, scalar arithmetic, casts.
#include <cmath>
#include <type_traits>

#include "globe/kernels/elementwise.h"
#include "globe/kernels/fast_math.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {

namespace {

using kernels::map_binary;
using kernels::gelu_tanh_slope;
using kernels::gelu_tanh_value;
using kernels::map_unary;

enum class UnaryKind { neg, exp, log, sqrt, relu, gelu, tanh, sigmoid, gelu_tanh };

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
  }
  GLOBE_FAIL("[unary] unknown kind ", int(k));
}

template <class T>
T gelu_value(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2)));
}
template <class T>
T gelu_slope(T x) {
  return T(0.5) * (T(1) + std::erf(x * T(M_SQRT1_2))) +
         x * std::exp(T(-0.5) * x * x) * T(0.5 * M_2_SQRTPI * M_SQRT1_2);
}

// A float32 kernel kernel(x, y, n) over a contiguous copy of `a` (a itself when contiguous).
Tensor dense_f32(const Tensor& a, void (*kernel)(const float*, float*, int64_t)) {
  const Tensor d = kernels::dense(a);
  Tensor out = Tensor::uninitialized(d.shape(), d.dtype());
  kernel(d.data<float>(), out.data<float>(), d.numel());
  return out;
}

class Unary final : public Op {
 public:
  explicit Unary(UnaryKind kind) : kind_(kind) {}
  std::string name() const override { return unary_name(kind_); }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(is_floating(in[0].dtype), "[", name(), "] expects a floating tensor, got ",
                dtype_name(in[0].dtype), shape_str(in[0].shape));
    return in[0];
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()));
    if (kind_ == UnaryKind::neg) sbp_rules::add_all_partial(s, 1);  // linear
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return visit_floating(in[0].dtype(), unary_name(kind_), [&](auto tag) {
      using T = decltype(tag);
      const Tensor& a = in[0];
      switch (kind_) {
        case UnaryKind::neg: return map_unary<T, T>(a, [](T x) { return -x; });
        case UnaryKind::exp:
          if constexpr (std::is_same_v<T, float>) return dense_f32(a, kernels::exp_f32);
          return map_unary<T, T>(a, [](T x) { return std::exp(x); });
        case UnaryKind::log: return map_unary<T, T>(a, [](T x) { return std::log(x); });
        case UnaryKind::sqrt: return map_unary<T, T>(a, [](T x) { return std::sqrt(x); });
        case UnaryKind::relu: return map_unary<T, T>(a, [](T x) { return x > T(0) ? x : T(0); });
        case UnaryKind::gelu: return map_unary<T, T>(a, [](T x) { return gelu_value(x); });
        case UnaryKind::gelu_tanh:
          if constexpr (std::is_same_v<T, float>) return dense_f32(a, kernels::gelu_tanh_f32);
          return map_unary<T, T>(a, [](T x) { return gelu_tanh_value(x); });
        case UnaryKind::tanh: return map_unary<T, T>(a, [](T x) { return std::tanh(x); });
        case UnaryKind::sigmoid:
          return map_unary<T, T>(a, [](T x) { return T(1) / (T(1) + std::exp(-x)); });
      }
      GLOBE_FAIL("[unary] bad kind");
    });
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor& out, const Tensor& g,
                          const std::vector<bool>&) const override;

 private:
  UnaryKind kind_;
};

// Binary kinds; the *_grad kinds are the backward kernels of unary ops: f(grad, saved).
enum class BinaryKind { add, sub, mul, div, relu_grad, gelu_grad, tanh_grad, sigmoid_grad, gelu_tanh_grad };

// What each kind is; a switch per kind, so adding or reordering kinds cannot shift a property.
struct BinaryInfo {
  const char* name;
  bool differentiable;  // arithmetic; the *_grad kinds are backward kernels
  bool integers;        // also defined on int64
};
BinaryInfo binary_info(BinaryKind k) {
  switch (k) {
    case BinaryKind::add: return {"add", true, true};
    case BinaryKind::sub: return {"sub", true, true};
    case BinaryKind::mul: return {"mul", true, true};
    case BinaryKind::div: return {"div", true, false};
    case BinaryKind::relu_grad: return {"relu_grad", false, false};
    case BinaryKind::gelu_grad: return {"gelu_grad", false, false};
    case BinaryKind::tanh_grad: return {"tanh_grad", false, false};
    case BinaryKind::sigmoid_grad: return {"sigmoid_grad", false, false};
    case BinaryKind::gelu_tanh_grad: return {"gelu_tanh_grad", false, false};
  }
  GLOBE_FAIL("[binary] unknown kind ", int(k));
}
const char* binary_name(BinaryKind k) { return binary_info(k).name; }

class Binary final : public Op {
 public:
  explicit Binary(BinaryKind kind) : kind_(kind) {}
  std::string name() const override { return binary_name(kind_); }
  bool differentiable() const override { return binary_info(kind_).differentiable; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(in[0].dtype == in[1].dtype, "[", name(), "] dtype mismatch: ", dtype_name(in[0].dtype),
                shape_str(in[0].shape), " and ", dtype_name(in[1].dtype), shape_str(in[1].shape));
    GLOBE_CHECK(is_floating(in[0].dtype) || binary_info(kind_).integers, "[", name(),
                "] expects floating tensors, got ", dtype_name(in[0].dtype));
    return {broadcast_shapes(in[0].shape, in[1].shape, binary_name(kind_)), in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_broadcast_split(s, in, broadcast_shapes(in[0].shape, in[1].shape, binary_name(kind_)));
    if (kind_ == BinaryKind::add || kind_ == BinaryKind::sub)
      sbp_rules::add_all_partial(s, 2);  // (a0 + a1) + (b0 + b1) = (a0 + b0) + (a1 + b1)
    if (kind_ == BinaryKind::mul) sbp_rules::add_partial_at(s, 2, 1);
    if (kind_ != BinaryKind::add && kind_ != BinaryKind::sub) sbp_rules::add_partial_at(s, 2, 0);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const Tensor &a = in[0], &b = in[1];
    const Shape& s = args.out.shape;
    if (a.dtype() == DType::int64) {
      return visit_dtype(a.dtype(), [&](auto tag) { return arithmetic<decltype(tag)>(a, b, s); });
    }
    return visit_floating(a.dtype(), binary_name(kind_), [&](auto tag) {
      using T = decltype(tag);
      switch (kind_) {
        case BinaryKind::relu_grad:
          return map_binary<T>(a, b, s, [](T g, T x) { return x > T(0) ? g : T(0); });
        case BinaryKind::gelu_grad:
          return map_binary<T>(a, b, s, [](T g, T x) { return g * gelu_slope(x); });
        case BinaryKind::gelu_tanh_grad:
          if constexpr (std::is_same_v<T, float>) {
            if (a.shape() == s && b.shape() == s) {
              const Tensor g = kernels::dense(a), x = kernels::dense(b);
              Tensor out = Tensor::uninitialized(s, g.dtype());
              kernels::gelu_tanh_grad_f32(g.data<float>(), x.data<float>(), out.data<float>(), g.numel());
              return out;
            }
          }
          return map_binary<T>(a, b, s, [](T g, T x) { return g * gelu_tanh_slope(x); });
        case BinaryKind::tanh_grad:
          return map_binary<T>(a, b, s, [](T g, T y) { return g * (T(1) - y * y); });
        case BinaryKind::sigmoid_grad:
          return map_binary<T>(a, b, s, [](T g, T y) { return g * y * (T(1) - y); });
        default: return arithmetic<T>(a, b, s);
      }
    });
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor& out, const Tensor& g,
                          const std::vector<bool>& needs) const override {
    const Tensor &a = in[0], &b = in[1];
    Tensor ga, gb;
    switch (kind_) {
      case BinaryKind::add:
        if (needs[0]) ga = sum_to(g, a.shape());
        if (needs[1]) gb = sum_to(g, b.shape());
        break;
      case BinaryKind::sub:
        if (needs[0]) ga = sum_to(g, a.shape());
        if (needs[1]) gb = sum_to(neg(g), b.shape());
        break;
      case BinaryKind::mul:
        if (needs[0]) ga = sum_to(mul(g, b), a.shape());
        if (needs[1]) gb = sum_to(mul(g, a), b.shape());
        break;
      case BinaryKind::div:
        if (needs[0]) ga = sum_to(div(g, b), a.shape());
        if (needs[1]) gb = sum_to(neg(div(mul(g, out), b)), b.shape());
        break;
      default: return GraphOp::vjp(in, out, g, needs);  // a backward kernel: no gradient
    }
    return {ga, gb};
  }

 private:
  template <class T>
  Tensor arithmetic(const Tensor& a, const Tensor& b, const Shape& s) const {
    switch (kind_) {
      case BinaryKind::add: return map_binary<T>(a, b, s, [](T x, T y) { return x + y; });
      case BinaryKind::sub: return map_binary<T>(a, b, s, [](T x, T y) { return x - y; });
      case BinaryKind::mul: return map_binary<T>(a, b, s, [](T x, T y) { return x * y; });
      case BinaryKind::div: return map_binary<T>(a, b, s, [](T x, T y) { return x / y; });
      default: GLOBE_FAIL("[", name(), "] not defined for ", dtype_name(a.dtype()));
    }
  }
  BinaryKind kind_;
};

Tensor binary(BinaryKind k, const Tensor& a, const Tensor& b) {
  return apply_op<Binary>({a, b}, k);
}

std::vector<Tensor> Unary::vjp(const std::vector<Tensor>& in, const Tensor& out, const Tensor& g,
                               const std::vector<bool>&) const {
  const Tensor& x = in[0];
  switch (kind_) {
    case UnaryKind::neg: return {neg(g)};
    case UnaryKind::exp: return {mul(g, out)};
    case UnaryKind::log: return {div(g, x)};
    case UnaryKind::sqrt: return {div(g, mul(out, 2.0))};
    case UnaryKind::relu: return {binary(BinaryKind::relu_grad, g, x)};
    case UnaryKind::gelu: return {binary(BinaryKind::gelu_grad, g, x)};
    case UnaryKind::gelu_tanh: return {binary(BinaryKind::gelu_tanh_grad, g, x)};
    case UnaryKind::tanh: return {binary(BinaryKind::tanh_grad, g, out)};
    case UnaryKind::sigmoid: return {binary(BinaryKind::sigmoid_grad, g, out)};
  }
  return {};
}

// x + s, x * s, x ^ s with a scalar s.
enum class ScalarKind { add, mul, pow };

class Scalar final : public Op {
 public:
  Scalar(ScalarKind kind, double s) : kind_(kind), s_(s) {}
  std::string name() const override {
    return kind_ == ScalarKind::add ? "add_scalar" : kind_ == ScalarKind::mul ? "mul_scalar" : "pow";
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(is_floating(in[0].dtype), "[", name(), "] expects a floating tensor, got ",
                dtype_name(in[0].dtype));
    return in[0];
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()));
    if (kind_ == ScalarKind::mul) sbp_rules::add_all_partial(s, 1);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return visit_floating(in[0].dtype(), "scalar", [&](auto tag) {
      using T = decltype(tag);
      const T s = static_cast<T>(s_);
      switch (kind_) {
        case ScalarKind::add: return map_unary<T, T>(in[0], [s](T x) { return x + s; });
        case ScalarKind::mul: return map_unary<T, T>(in[0], [s](T x) { return x * s; });
        case ScalarKind::pow:
          if (s_ == 2.0) return map_unary<T, T>(in[0], [](T x) { return x * x; });
          return map_unary<T, T>(in[0], [s](T x) { return std::pow(x, s); });
      }
      GLOBE_FAIL("[scalar] bad kind");
    });
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    switch (kind_) {
      case ScalarKind::add: return {g};
      case ScalarKind::mul: return {mul(g, s_)};
      case ScalarKind::pow: return {mul(g, mul(pow(in[0], s_ - 1.0), s_))};
    }
    return {};
  }

 private:
  ScalarKind kind_;
  double s_;
};

class Cast final : public Op {
 public:
  explicit Cast(DType to) : to_(to) {}
  std::string name() const override { return "to_dtype"; }
  bool differentiable() const override { return is_floating(to_); }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return {in[0].shape, to_}; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()));
    sbp_rules::add_all_partial(s, 1);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    Tensor out = Tensor::uninitialized(in[0].shape(), to_);
    kernels::copy_into(out, in[0]);
    return out;
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {to_dtype(g, in[0].dtype())};
  }

 private:
  DType to_;
};

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryKind::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryKind::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryKind::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryKind::div, a, b); }
Tensor add(const Tensor& a, double s) { return apply_op<Scalar>({a}, ScalarKind::add, s); }
Tensor mul(const Tensor& a, double s) { return apply_op<Scalar>({a}, ScalarKind::mul, s); }
Tensor pow(const Tensor& a, double e) { return apply_op<Scalar>({a}, ScalarKind::pow, e); }
Tensor neg(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::neg); }
Tensor exp(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::exp); }
Tensor log(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::log); }
Tensor sqrt(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::sqrt); }
Tensor relu(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::relu); }
Tensor gelu(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::gelu); }
Tensor gelu_tanh(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::gelu_tanh); }
Tensor tanh(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::tanh); }
Tensor sigmoid(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::sigmoid); }

Tensor to_dtype(const Tensor& a, DType dtype) {
  if (a.dtype() == dtype) return a;
  return apply_op<Cast>({a}, dtype);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, double s) { return add(a, s); }
Tensor operator+(double s, const Tensor& a) { return add(a, s); }
Tensor operator-(const Tensor& a, double s) { return add(a, -s); }
Tensor operator-(double s, const Tensor& a) { return add(neg(a), s); }
Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
Tensor operator/(const Tensor& a, double s) { return mul(a, 1.0 / s); }
Tensor operator/(double s, const Tensor& a) { return mul(pow(a, -1.0), s); }

}  // namespace globe
