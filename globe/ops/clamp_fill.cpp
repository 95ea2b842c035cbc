// Ops that pick, per element, between a tensor's value and a bound: clamp and abs (built from
// relu), with torch's gradients (masked_fill is where's, ops/compare.cpp).
#include <limits>
#include <optional>

#include "globe/kernels/device_kernels.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {
namespace {

// Applies to each element separately: every split layout passes through; a partial sum does not
// (clamp of a sum is not the sum of clamps).
std::vector<SbpSignature> pointwise_signatures(size_t n_inputs, int64_t ndim) {
  std::vector<SbpSignature> s;
  sbp_rules::add_same_split(s, n_inputs, ndim);
  return s;
}

// The bounds of a clamp (a missing one is infinite).
double lower(std::optional<double> lo) { return lo ? *lo : -std::numeric_limits<double>::infinity(); }
double upper(std::optional<double> hi) { return hi ? *hi : std::numeric_limits<double>::infinity(); }

// The gradient of clamp: g where the value passed (lo <= x <= hi), else 0, as torch's.
class ClampBackward final : public Op {
 public:
  ClampBackward(std::optional<double> lo, std::optional<double> hi) : lo_(lo), hi_(hi) {}
  std::string name() const override { return "clamp_backward"; }
  bool differentiable() const override { return false; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return in[0]; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return pointwise_signatures(2, int64_t(in[0].shape.size()));
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::kernels_for(in[0]).clamp_backward(in[0], in[1], lower(lo_), upper(hi_));
  }

 private:
  std::optional<double> lo_, hi_;
};

class Clamp final : public Op {
 public:
  Clamp(std::optional<double> lo, std::optional<double> hi) : lo_(lo), hi_(hi) {}
  std::string name() const override { return "clamp"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(is_floating(in[0].dtype), "[clamp] expects a floating tensor, got ", dtype_name(in[0].dtype),
                shape_str(in[0].shape));
    return in[0];
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return pointwise_signatures(1, int64_t(in[0].shape.size()));
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::kernels_for(in[0]).clamp(in[0], lower(lo_), upper(hi_));
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {apply_op<ClampBackward>({g, in[0]}, lo_, hi_)};
  }

 private:
  std::optional<double> lo_, hi_;
};

}  // namespace

Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max) {
  GLOBE_CHECK(min || max, "[clamp] needs min, max or both");
  return apply_op<Clamp>({a}, min, max);
}

// |x| = relu(x) + relu(-x): exact (one term is 0), and its gradient is torch's sign(x), 0 at 0.
Tensor abs(const Tensor& a) { return add(relu(a), relu(neg(a))); }

}  // namespace globe
