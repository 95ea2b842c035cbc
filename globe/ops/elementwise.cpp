// Elementwise ops: unary math, binary arithmetic with broadcasting, scalar arithmetic, casts.
#include <cmath>

#include "globe/kernels/device_kernels.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {

namespace {

using kernels::BinaryKind;
using kernels::binary_name;
using kernels::kernels_for;
using kernels::ScalarKind;
using kernels::UnaryKind;
using kernels::unary_name;

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
    return kernels_for(in[0]).unary(kind_, in[0]);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor& out, const Tensor& g,
                          const std::vector<bool>&) const override;

 private:
  UnaryKind kind_;
};

// What each binary kind is; a switch per kind, so adding or reordering kinds cannot shift a property.
struct BinaryInfo {
  bool differentiable;  // arithmetic; the *_grad kinds are backward kernels
  bool integers;        // also defined on int64
};
BinaryInfo binary_info(BinaryKind k) {
  switch (k) {
    case BinaryKind::add:
    case BinaryKind::sub:
    case BinaryKind::mul: return {true, true};
    case BinaryKind::div:
    case BinaryKind::swiglu: return {true, false};
    case BinaryKind::relu_grad:
    case BinaryKind::gelu_grad:
    case BinaryKind::tanh_grad:
    case BinaryKind::sigmoid_grad:
    case BinaryKind::gelu_tanh_grad:
    case BinaryKind::silu_grad: return {false, false};
  }
  GLOBE_FAIL("[binary] unknown kind ", int(k));
}

Tensor binary(BinaryKind k, const Tensor& a, const Tensor& b);

// swiglu's backward: (g, gate, up), one shape -> [2, ...] packed (d gate, d up); split along any
// dim as the inputs are (the output's dim one later), linear in g.
class SwigluBackward final : public Op {
 public:
  std::string name() const override { return "swiglu_backward"; }
  bool differentiable() const override { return false; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    Shape packed = in[0].shape;
    packed.insert(packed.begin(), 2);
    return {packed, in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    for (int64_t d = 0; d < int64_t(in[0].shape.size()); ++d)
      s.push_back({std::vector<Sbp>(3, sbp::split(d)), sbp::split(d + 1)});
    sbp_rules::add_partial_at(s, 3, 0);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels_for(in[0]).swiglu_backward(in[0], in[1], in[2]);
  }
};

class Binary final : public Op {
 public:
  explicit Binary(BinaryKind kind) : kind_(kind) {}
  std::string name() const override { return binary_name(kind_); }
  bool differentiable() const override { return binary_info(kind_).differentiable; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(in[0].dtype == in[1].dtype, "[", name(), "] dtype mismatch: ", dtype_name(in[0].dtype),
                shape_str(in[0].shape), " and ", dtype_name(in[1].dtype), shape_str(in[1].shape));
    GLOBE_CHECK(is_floating(in[0].dtype) || (binary_info(kind_).integers && in[0].dtype == kInt64), "[", name(),
                "] has no ", dtype_name(in[0].dtype), " kernel (float32, float64",
                binary_info(kind_).integers ? " and int64" : "", " only): cast it with to_dtype first");
    return {broadcast_shapes(in[0].shape, in[1].shape, binary_name(kind_)), in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_broadcast_split(s, in, broadcast_shapes(in[0].shape, in[1].shape, binary_name(kind_)));
    if (kind_ == BinaryKind::add || kind_ == BinaryKind::sub)
      sbp_rules::add_all_partial(s, 2);  // (a0 + a1) + (b0 + b1) = (a0 + b0) + (a1 + b1)
    // Linear in b: mul and swiglu; in a: mul, div and the backward kinds (a is the gradient).
    if (kind_ == BinaryKind::mul || kind_ == BinaryKind::swiglu) sbp_rules::add_partial_at(s, 2, 1);
    if (kind_ != BinaryKind::add && kind_ != BinaryKind::sub && kind_ != BinaryKind::swiglu)
      sbp_rules::add_partial_at(s, 2, 0);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    return kernels_for(in[0]).binary(kind_, in[0], in[1], args.out.shape);
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
      case BinaryKind::swiglu:
        if (a.shape() == g.shape() && b.shape() == g.shape()) {  // one fused pass for both
          const Tensor packed = apply_op<SwigluBackward>({g, a, b});
          return {squeeze(narrow(packed, 0, 0, 1), 0), squeeze(narrow(packed, 0, 1, 1), 0)};
        }
        if (needs[0]) ga = sum_to(binary(BinaryKind::silu_grad, mul(g, b), a), a.shape());
        if (needs[1]) gb = sum_to(mul(g, silu(a)), b.shape());
        break;
      default: return GraphOp::vjp(in, out, g, needs);  // a backward kernel: no gradient
    }
    return {ga, gb};
  }

 private:
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
    case UnaryKind::silu: return {binary(BinaryKind::silu_grad, g, x)};
  }
  return {};
}

class Scalar final : public Op {
 public:
  Scalar(ScalarKind kind, double s) : kind_(kind), s_(s) {}
  std::string name() const override { return kernels::scalar_name(kind_); }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    const DType t = in[0].dtype;
    if (is_floating(t)) return in[0];
    // An integer tensor plus or times an integer stays integer (torch's and OneFlow's `x * 2`).
    GLOBE_CHECK(t != DType::boolean && kind_ != ScalarKind::pow && s_ == std::floor(s_), "[", name(),
                "] expects a floating tensor, or an integer one with an integer scalar for + and *; got ",
                dtype_name(t), " and ", s_, " (cast it with .float() first)");
    return in[0];
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()));
    if (kind_ == ScalarKind::mul) sbp_rules::add_all_partial(s, 1);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels_for(in[0]).scalar(kind_, in[0], s_);
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
    // Casting each summand is casting the sum only into a floating dtype: into int64 or bool each
    // summand would be truncated (or made 0 / 1) on its own.
    if (is_floating(to_)) sbp_rules::add_all_partial(s, 1);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    Tensor out = Tensor::uninitialized(in[0].shape(), to_, in[0].device());
    kernels_for(in[0]).copy_into(out, in[0]);
    return out;
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {to_dtype(g, in[0].dtype())};
  }

 private:
  DType to_;
};

// A copy on another device (to(device)).
class ToDevice final : public Op {
 public:
  explicit ToDevice(Device to) : to_(to) {}
  std::string name() const override { return "to_device"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return in[0]; }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::copy_to_device(in[0], to_);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {to(g, in[0].device())};
  }

 private:
  Device to_;
};

}  // namespace

Tensor to(const Tensor& a, const Device& device) {
  GLOBE_CHECK(a.defined(), "[to] got an undefined tensor");
  GLOBE_CHECK(!a.is_global(), "[to] ", describe(a), " is global: it changes device with its placement, "
              "to_global(placement(\"", device_type_name(device.type), "\", ...))");
  if (a.device() == device) return a;
  check_device_usable(device, "[to]");
  return apply_op<ToDevice>({a}, device);
}

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
Tensor silu(const Tensor& a) { return apply_op<Unary>({a}, UnaryKind::silu); }
Tensor swiglu(const Tensor& gate, const Tensor& up) { return binary(BinaryKind::swiglu, gate, up); }

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
