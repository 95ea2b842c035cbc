// Rotary position embedding (RoPE) as one fused op: Llama's rotation of each query and key row by
// its position's angles, which as a composite (rotate_half's slices, neg and cat, two products and
// a sum) is five kernels forward and more backward.
#include "globe/kernels/device_kernels.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {

namespace {

// x [..., T, D], cos and sin [T, D / 2] -> [..., T, D]; `inverse` rotates back (sin negated), which
// is also the rotation's own backward for x.
class Rotary final : public Op {
 public:
  explicit Rotary(bool inverse) : inverse_(inverse) {}
  std::string name() const override { return inverse_ ? "rotary_embedding_backward" : "rotary_embedding"; }
  bool vjp_reads_output() const override { return false; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    const Shape& x = in[0].shape;
    GLOBE_CHECK(is_floating(in[0].dtype) && x.size() >= 2 && x.back() % 2 == 0, "[rotary_embedding] expects a ",
                "floating x [..., T, D] with D even, got ", dtype_name(in[0].dtype), shape_str(x));
    const Shape table = {x[x.size() - 2], x.back() / 2};
    for (size_t i = 1; i < 3; ++i)
      GLOBE_CHECK(in[i].dtype == in[0].dtype && in[i].shape == table, "[rotary_embedding] ", i == 1 ? "cos " : "sin ",
                  dtype_name(in[i].dtype), shape_str(in[i].shape), " is not ", dtype_name(in[0].dtype),
                  shape_str(table), " ([T, D / 2]) for x ", dtype_name(in[0].dtype), shape_str(x));
    return in[0];
  }
  // x split along a leading dim with the tables B, or along T with the tables split along T too;
  // linear in x: x P with the tables B gives P.
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    const int64_t nd = int64_t(in[0].shape.size());
    std::vector<SbpSignature> s;
    for (int64_t d = 0; d + 2 < nd; ++d) s.push_back({{sbp::split(d), sbp::broadcast, sbp::broadcast}, sbp::split(d)});
    s.push_back({{sbp::split(nd - 2), sbp::split(0), sbp::split(0)}, sbp::split(nd - 2)});
    sbp_rules::add_partial_at(s, 3, 0);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::kernels_for(in[0]).rotary(in[0], in[1], in[2], inverse_);
  }
  // x: the inverse rotation of g. The tables (constants in a model, but differentiable here): with
  // halves (a, b) of x and of g, y_a = a c - b s, y_b = b c + a s (s negated when inverse), so
  // dc = sum(g_a a + g_b b) and ds = sum(g_b a - g_a b) over the leading dims.
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>& needs) const override {
    std::vector<Tensor> grads(3);
    if (needs[0]) grads[0] = apply_op<Rotary>({g, in[1], in[2]}, !inverse_);
    if (needs[1] || needs[2]) {
      const Tensor& x = in[0];
      const int64_t last = x.dim() - 1, h = x.shape().back() / 2;
      const Tensor xa = slice(x, last, 0, h), xb = slice(x, last, h, 2 * h);
      const Tensor ga = slice(g, last, 0, h), gb = slice(g, last, h, 2 * h);
      if (needs[1]) grads[1] = sum_to(add(mul(ga, xa), mul(gb, xb)), in[1].shape());
      if (needs[2]) {
        const Tensor ds = sum_to(sub(mul(gb, xa), mul(ga, xb)), in[2].shape());
        grads[2] = inverse_ ? neg(ds) : ds;
      }
    }
    return grads;
  }

 private:
  bool inverse_;
};

}  // namespace

Tensor rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  return apply_op<Rotary>({x, cos, sin}, false);
}

}  // namespace globe
