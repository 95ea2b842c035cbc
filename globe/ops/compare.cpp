// Elementwise comparisons (eq, ne, lt, le, gt, ge: a bool per element), where (a per-element choice
// between two operands by a bool condition; masked_fill is where with a fill), and the whole-tensor
// answers torch gives as Python bools: equal and allclose.
#include <cmath>
#include <optional>

#include "globe/kernels/device_kernels.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {
namespace {

using kernels::CompareKind;
using kernels::compare_name;
using kernels::kernels_for;

// The dtype two operands of a comparison meet in, as torch promotes them: their own when they
// agree, else a floating one over an integer or bool (the wider of two floating ones), int64 over bool.
DType common_dtype(DType a, DType b) {
  if (a == b) return a;
  if (is_floating(a) && is_floating(b)) return a == kFloat64 || b == kFloat64 ? kFloat64 : kFloat32;
  if (is_floating(a)) return a;
  if (is_floating(b)) return b;
  return kInt64;  // two integer or bool dtypes: int64 holds both
}

// The dtype a tensor of dtype `t` and the number `s` meet in, as torch's: a floating tensor's own
// (the number rounded to it); an integer or bool tensor's int64 where `s` is an integer int64
// holds, else float64 (a fraction, an infinity, NaN or 2^63 are not cast into an integer).
DType scalar_dtype(DType t, double s) {
  if (is_floating(t)) return t;
  return s == std::floor(s) && s >= -9.2233720368547758e18 && s < 9.2233720368547758e18 ? kInt64 : kFloat64;
}

// Whether the number `s` is exactly a value of dtype `t` (any number of a floating one, rounded).
bool holds(DType t, double s) {
  if (is_floating(t)) return true;
  if (s != std::floor(s)) return false;
  switch (t) {
    case DType::boolean: return s == 0.0 || s == 1.0;
    case DType::int8: return s >= -128 && s <= 127;
    case DType::uint8: return s >= 0 && s <= 255;
    case DType::int32: return s >= -2147483648.0 && s <= 2147483647.0;
    default: return scalar_dtype(t, s) == kInt64;
  }
}

// `t` in `dtype` (a local kernel-level conversion: the ops below have no gradient through it).
Tensor in_dtype(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? t : kernels::device_convert(t, dtype);
}

// A one-element tensor holding `value` in `dtype` on `device`: a scalar operand, broadcast.
Tensor scalar_tensor(double value, DType dtype, const Device& device) {
  Tensor s = Tensor::uninitialized({}, dtype, device);
  kernels::kernels_on(device).fill(s, value);
  return s;
}

// a <kind> b, or a <kind> s with a scalar s (then a is the only input). Not differentiable.
class Compare final : public Op {
 public:
  Compare(CompareKind kind, std::optional<double> s) : kind_(kind), s_(s) {}
  std::string name() const override { return compare_name(kind_); }
  bool differentiable() const override { return false; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    if (s_) return {in[0].shape, kBool};
    return {broadcast_shapes(in[0].shape, in[1].shape, compare_name(kind_)), kBool};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    if (s_) sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()));
    else sbp_rules::add_broadcast_split(s, in, infer(in).shape);
    return s;  // no partial sums: a comparison of a sum is not a sum of comparisons
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const Tensor& a = in[0];
    if (s_) {
      const DType dt = scalar_dtype(a.dtype(), *s_);
      return kernels_for(a).compare(kind_, in_dtype(a, dt), scalar_tensor(*s_, dt, a.device()), args.out.shape);
    }
    const DType dt = common_dtype(a.dtype(), in[1].dtype());
    return kernels_for(a).compare(kind_, in_dtype(a, dt), in_dtype(in[1], dt), args.out.shape);
  }

 private:
  CompareKind kind_;
  std::optional<double> s_;
};

Tensor compare(CompareKind k, const Tensor& a, const Tensor& b) { return apply_op<Compare>({a, b}, k, std::nullopt); }
Tensor compare(CompareKind k, const Tensor& a, double s) { return apply_op<Compare>({a}, k, s); }

// where(cond, a, b): a where cond holds, else b. Either operand may be a scalar (`a_` / `b_`), the
// tensors following cond in the inputs; masked_fill(x, mask, v) is where(mask, v, x).
class Where final : public Op {
 public:
  Where(std::string name, std::optional<double> a, std::optional<double> b) : name_(std::move(name)), a_(a), b_(b) {}
  std::string name() const override { return name_; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(in[0].dtype == kBool || in[0].dtype == kInt64, "[", name_, "] the ",
                name_ == "where" ? "condition" : "mask", " must be bool (or int64, non-zero meaning true), got ",
                dtype_name(in[0].dtype), shape_str(in[0].shape));
    Shape shape = in[0].shape;
    for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].shape, name_.c_str());
    if (in.size() == 3)
      GLOBE_CHECK(in[1].dtype == in[2].dtype, "[", name_, "] the two operands differ in dtype: ",
                  dtype_name(in[1].dtype), shape_str(in[1].shape), " and ", dtype_name(in[2].dtype),
                  shape_str(in[2].shape), " (cast one with to_dtype)");
    DType dt = in.size() > 1 ? in[1].dtype : kFloat32;
    const std::optional<double> scalar = a_ ? a_ : b_;
    if (name_ == "masked_fill") {
      GLOBE_CHECK(shape == in[1].shape, "[masked_fill] the mask's shape ", shape_str(in[0].shape),
                  " does not broadcast to the input's ", shape_str(in[1].shape));
      GLOBE_CHECK(holds(dt, *scalar), "[masked_fill] the value ", *scalar, " is not a ", dtype_name(dt),
                  " value, the input's dtype (", shape_str(in[1].shape), "): cast the input first");
    } else if (scalar && in.size() == 2 && !holds(dt, *scalar)) {
      dt = kFloat32;  // torch's promotion: an integer or bool tensor with a number it cannot hold
    }
    return {shape, dt};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_broadcast_split(s, in, infer(in).shape);
    // where(c, a0 + a1, b0 + b1) = where(c, a0, b0) + where(c, a1, b1): both operands partial.
    if (in.size() == 3) s.push_back({{sbp::broadcast, sbp::partial_sum, sbp::partial_sum}, sbp::partial_sum});
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const Tensor& cond = in[0];
    const Device device = cond.device();
    const DType dt = args.out.dtype;
    size_t next = 1;
    const Tensor a = a_ ? scalar_tensor(*a_, dt, device) : in_dtype(in[next++], dt);
    const Tensor b = b_ ? scalar_tensor(*b_, dt, device) : in_dtype(in[next++], dt);
    return kernels_for(cond).where(cond, a, b, args.out.shape);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>& needs) const override {
    const Tensor cond = in[0].detach();
    std::vector<Tensor> grads(in.size());
    size_t next = 1;
    if (!a_) {
      if (needs[next]) grads[next] = sum_to(where(cond, g, 0.0), in[next].shape());
      ++next;
    }
    if (!b_ && needs[next]) grads[next] = sum_to(where(cond, 0.0, g), in[next].shape());
    return grads;
  }

 private:
  std::string name_;
  std::optional<double> a_, b_;
};

// Whether every element of the bool tensor t holds (collective for a global t, as item() is).
bool all_true(const Tensor& t) {
  return t.numel() == 0 || sum(to_dtype(t, kInt64)).item<int64_t>() == t.numel();
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare(CompareKind::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(CompareKind::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(CompareKind::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(CompareKind::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(CompareKind::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(CompareKind::ge, a, b); }
Tensor eq(const Tensor& a, double s) { return compare(CompareKind::eq, a, s); }
Tensor ne(const Tensor& a, double s) { return compare(CompareKind::ne, a, s); }
Tensor lt(const Tensor& a, double s) { return compare(CompareKind::lt, a, s); }
Tensor le(const Tensor& a, double s) { return compare(CompareKind::le, a, s); }
Tensor gt(const Tensor& a, double s) { return compare(CompareKind::gt, a, s); }
Tensor ge(const Tensor& a, double s) { return compare(CompareKind::ge, a, s); }

Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, double s) { return eq(a, s); }
Tensor operator!=(const Tensor& a, double s) { return ne(a, s); }
Tensor operator<(const Tensor& a, double s) { return lt(a, s); }
Tensor operator<=(const Tensor& a, double s) { return le(a, s); }
Tensor operator>(const Tensor& a, double s) { return gt(a, s); }
Tensor operator>=(const Tensor& a, double s) { return ge(a, s); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return apply_op<Where>({cond, a, b}, "where", std::nullopt, std::nullopt);
}
Tensor where(const Tensor& cond, const Tensor& a, double b) {
  return apply_op<Where>({cond, a}, "where", std::nullopt, b);
}
Tensor where(const Tensor& cond, double a, const Tensor& b) {
  return apply_op<Where>({cond, b}, "where", a, std::nullopt);
}

Tensor masked_fill(const Tensor& a, const Tensor& mask, double value) {
  return apply_op<Where>({mask, a}, "masked_fill", value, std::nullopt);
}

Tensor logical_not(const Tensor& a) { return eq(a, 0.0); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return where(ne(a, 0.0), ne(b, 0.0), 0.0); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return where(ne(a, 0.0), 1.0, ne(b, 0.0)); }

bool equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  return all_true(eq(a, b));
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  GLOBE_CHECK(is_floating(a.dtype()) && is_floating(b.dtype()), "[allclose] expects floating tensors, got ",
              describe(a), " and ", describe(b));
  // |a - b| <= atol + rtol |b| between finite values, in float64 (torch's formula); equal values
  // (infinities of one sign too) pass; an infinity is close to nothing else.
  const Tensor x = to_dtype(a, kFloat64), y = to_dtype(b, kFloat64);
  const Tensor finite = logical_and(eq(sub(x, x), 0.0), eq(sub(y, y), 0.0));
  Tensor ok = logical_or(eq(x, y), logical_and(finite, le(abs(sub(x, y)), add(mul(abs(y), rtol), atol))));
  if (equal_nan) ok = logical_or(ok, logical_and(ne(x, x), ne(y, y)));
  return all_true(ok);
}

}  // namespace globe
