// matmul: [..., n, k] @ [..., k, m] -> [..., n, m], batch dims broadcast; matmul_nt and linear take
// b stored transposed ([..., m, k]).
#include "globe/kernels/matmul.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {

namespace {

// The last two dims of t swapped, as a view of its storage (no autograd: used on shards inside
// compute, where the kernel reads transposed operands through their strides).
Tensor swap_last_dims(const Tensor& t) {
  Shape shape = t.shape(), strides = t.strides();
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  return Tensor::view_of(t, shape, strides, t.offset());
}

// a @ b, or a @ b^T with transpose_b (b stored [..., m, k], as Linear's weight [out, in]): the
// attribute, not b's strides, says so, so every rank of a global op decides alike and the
// weight's gradient comes out in its own storage order with no transposing copy.
class Matmul final : public Op {
 public:
  explicit Matmul(bool transpose_b) : transpose_b_(transpose_b) {}
  std::string name() const override { return transpose_b_ ? "matmul_nt" : "matmul"; }
  // Rows of a -> rows of out; columns of b -> columns of out; the inner dim split on both gives
  // partial products; batch dims split alike on both (or on one side when the other broadcasts).
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    const int64_t na = int64_t(in[0].shape.size()), nb = int64_t(in[1].shape.size());
    const Shape out = infer(in).shape;
    const int64_t no = int64_t(out.size());
    const int64_t b_inner = transpose_b_ ? nb - 1 : nb - 2, b_cols = transpose_b_ ? nb - 2 : nb - 1;
    std::vector<SbpSignature> s = {
        {{sbp::split(na - 2), sbp::broadcast}, sbp::split(no - 2)},
        {{sbp::broadcast, sbp::split(b_cols)}, sbp::split(no - 1)},
        {{sbp::split(na - 1), sbp::split(b_inner)}, sbp::partial_sum},
        {{sbp::partial_sum, sbp::broadcast}, sbp::partial_sum},
        {{sbp::broadcast, sbp::partial_sum}, sbp::partial_sum},
    };
    for (int64_t d = 0; d < no - 2; ++d) {
      const int64_t da = d - (no - na), db = d - (no - nb);
      const bool a_full = da >= 0 && in[0].shape[da] == out[d], b_full = db >= 0 && in[1].shape[db] == out[d];
      if (a_full && b_full) s.push_back({{sbp::split(da), sbp::split(db)}, sbp::split(d)});
      else if (a_full) s.push_back({{sbp::split(da), sbp::broadcast}, sbp::split(d)});
      else if (b_full) s.push_back({{sbp::broadcast, sbp::split(db)}, sbp::split(d)});
    }
    return s;
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    const Shape &a = in[0].shape, &b = in[1].shape;
    GLOBE_CHECK(a.size() >= 2 && b.size() >= 2, "[", name(), "] needs tensors of at least 2 dims, got ",
                shape_str(a), " and ", shape_str(b));
    GLOBE_CHECK(in[0].dtype == in[1].dtype, "[", name(), "] dtype mismatch: ", dtype_name(in[0].dtype),
                shape_str(a), " @ ", dtype_name(in[1].dtype), shape_str(b));
    GLOBE_CHECK(is_floating(in[0].dtype), "[", name(), "] expects floating tensors, got ",
                dtype_name(in[0].dtype));
    const int64_t b_inner = transpose_b_ ? b.back() : b[b.size() - 2];
    const int64_t b_cols = transpose_b_ ? b[b.size() - 2] : b.back();
    GLOBE_CHECK(a.back() == b_inner, "[", name(), "] inner dims differ: ", shape_str(a),
                transpose_b_ ? " @ (" : " @ ", shape_str(b), transpose_b_ ? ")^T" : "");
    Shape out = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), name().c_str());
    out.push_back(a[a.size() - 2]);
    out.push_back(b_cols);
    return {out, in[0].dtype};
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    return kernels::matmul(in[0], transpose_b_ ? swap_last_dims(in[1]) : in[1], args.out.shape);
  }
  // Shapes without transpose_b: a [..., n, k], b [..., k, m], g [..., n, m];
  // with it: b [..., m, k].
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>& needs) const override {
    const Tensor &a = in[0], &b = in[1];
    Tensor ga, gb;
    // ga [..., n, k] = g @ b^T, or g @ b when b is stored transposed.
    if (needs[0]) ga = sum_to(transpose_b_ ? matmul(g, b) : matmul_nt(g, b), a.shape());
    if (needs[1]) {
      if (b.dim() == 2) {
        // Fold a's batch dims into its rows: one gemm instead of a batch summed afterwards.
        // gb [k, m] = a2^T g2, or [m, k] = g2^T a2 in b's storage order.
        const Tensor a2 = reshape(a, {-1, a.shape().back()}), g2 = reshape(g, {-1, g.shape().back()});
        gb = transpose_b_ ? matmul(transpose(g2, 0, 1), a2) : matmul(transpose(a2, 0, 1), g2);
      } else {
        gb = sum_to(transpose_b_ ? matmul(transpose(g, -1, -2), a) : matmul(transpose(a, -1, -2), g), b.shape());
      }
    }
    return {ga, gb};
  }

 private:
  bool transpose_b_;
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  // 1-D operands follow numpy: a vector is a row (left) or a column (right), removed afterwards;
  // two vectors give their dot product as a 0-d tensor.
  if (a.dim() == 1 && b.dim() == 1) return reshape(matmul(unsqueeze(a, 0), unsqueeze(b, 1)), {});
  if (a.dim() == 1) return squeeze(matmul(unsqueeze(a, 0), b), -2);
  if (b.dim() == 1) return squeeze(matmul(a, unsqueeze(b, 1)), -1);
  return apply_op<Matmul>({a, b}, /*transpose_b=*/false);
}

Tensor matmul_nt(const Tensor& a, const Tensor& b) { return apply_op<Matmul>({a, b}, /*transpose_b=*/true); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  GLOBE_CHECK(weight.dim() == 2, "[linear] weight must be [out_features, in_features], got ", describe(weight));
  GLOBE_CHECK(x.dim() >= 1 && x.shape().back() == weight.shape()[1], "[linear] input ", describe(x),
              " does not end in in_features=", weight.shape()[1], " of weight ", describe(weight));
  GLOBE_CHECK(!bias.defined() || bias.shape() == Shape{weight.shape()[0]}, "[linear] bias ", describe(bias),
              " is not [out_features=", weight.shape()[0], "]");
  Tensor y = x.dim() == 1 ? squeeze(matmul_nt(unsqueeze(x, 0), weight), 0) : matmul_nt(x, weight);
  return bias.defined() ? add(y, bias) : y;
}

}  // namespace globe
