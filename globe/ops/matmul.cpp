// matmul: [..., n, k] @ [..., k, m] -> [..., n, m], batch dims broadcast; matmul_nt and linear take
// b stored transposed ([..., m, k]) and an optional bias added inside the GEMM.
#include "globe/kernels/device_kernels.h"
#include "globe/kernels/fixed_order_matmul.h"
#include "globe/ops/hooks.h"
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
// weight's gradient comes out in its own storage order with no transposing copy. With has_bias a
// third input, broadcastable to the product's shape, is added in the GEMM's own output pass.
class Matmul final : public Op {
 public:
  Matmul(bool transpose_b, bool has_bias) : transpose_b_(transpose_b), has_bias_(has_bias) {}
  std::string name() const override {
    return std::string(transpose_b_ ? "matmul_nt" : "matmul") + (has_bias_ ? "_bias" : "");
  }
  bool vjp_reads_output() const override { return false; }
  // Rows of a -> rows of out; columns of b -> columns of out; the inner dim split on both gives
  // partial products; batch dims split alike on both (or on one side when the other broadcasts).
  // The bias follows the output as an operand of add would: split where the output is and the
  // bias has that dim, broadcast where it lacks it, partial where the output is partial.
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
    if (has_bias_) {
      const Shape& bias = in[2].shape;
      for (SbpSignature& sig : s) {
        Sbp follow = sbp::partial_sum;
        if (sig.output.is_split()) {
          const int64_t k = sig.output.dim - (no - int64_t(bias.size()));
          follow = k >= 0 && bias[k] == out[sig.output.dim] ? sbp::split(k) : sbp::broadcast;
        }
        sig.inputs.push_back(follow);
      }
      // (B, B, P) is not listed: every rank would add the whole product to its piece of the bias.
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
    if (has_bias_) {
      GLOBE_CHECK(in[2].dtype == in[0].dtype, "[", name(), "] bias dtype ", dtype_name(in[2].dtype),
                  " differs from the product's ", dtype_name(in[0].dtype));
      GLOBE_CHECK(in[2].shape.size() <= out.size() && broadcast_shapes(in[2].shape, out, name().c_str()) == out,
                  "[", name(), "] bias ", shape_str(in[2].shape), " does not broadcast to the product's shape ",
                  shape_str(out));
    }
    return {out, in[0].dtype};
  }
  bool tree_partials() const override { return !has_bias_; }
  std::vector<PieceDims> piece_dims(const std::vector<TensorMeta>& in) const override {
    const int64_t na = int64_t(in[0].shape.size()), nb = int64_t(in[1].shape.size()), kb = transpose_b_ ? nb - 1 : nb - 2;
    return {{0, na - 1, na - 1}, {1, kb, kb}};  // the inner dim of a and of b
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const Tensor b = transpose_b_ ? swap_last_dims(in[1]) : in[1];
    const Tensor bias = has_bias_ ? in[2] : Tensor();
    const auto& k = kernels::kernels_for(in[0]);
    const int64_t inner = in[0].shape().back();
    if (!deterministic() || inner == 0) return k.matmul(in[0], b, args.out.shape, bias);
    // Deterministic mode: every element an exactly specified sum over the leaves of the inner
    // dim (kernels/fixed_order_matmul.h), the bias added to the finished sum (matmul_nt fuses one
    // in this mode only where the inner dim is whole, so no partial product has one).
    const int64_t leaf = args.leaf_length(name().c_str(), "inner dim", 0, in[0].dim() - 1, in[0]);
    return kernels::fixed_order_matmul(in[0], b, args.out.shape, leaf, bias);
  }
  // Shapes without transpose_b: a [..., n, k], b [..., k, m], g [..., n, m];
  // with it: b [..., m, k]. bias: any shape that broadcasts to g's.
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
    std::vector<Tensor> grads = {ga, gb};
    // the bias's: g summed over the dims it was broadcast along
    if (has_bias_) grads.push_back(needs[2] ? sum_to(g, in[2].shape()) : Tensor());
    return grads;
  }

 private:
  bool transpose_b_, has_bias_;
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  // 1-D operands follow numpy: a vector is a row (left) or a column (right), removed afterwards;
  // two vectors give their dot product as a 0-d tensor.
  if (a.dim() == 1 && b.dim() == 1) return reshape(matmul(unsqueeze(a, 0), unsqueeze(b, 1)), {});
  if (a.dim() == 1) return squeeze(matmul(unsqueeze(a, 0), b), -2);
  if (b.dim() == 1) return squeeze(matmul(a, unsqueeze(b, 1)), -1);
  return apply_op<Matmul>({a, b}, /*transpose_b=*/false, /*has_bias=*/false);
}

namespace {

// True where a global operand is laid out in pieces of a sum, or split along dim `inner` (its
// inner dim; -1: none), on some mesh axis of more than one rank: a product over it comes out
// partial.
bool in_pieces(const Tensor& t, int64_t inner) {
  if (!t.is_global()) return false;
  const NdSbp& sbp = t.sbp();
  for (size_t axis = 0; axis < sbp.size(); ++axis)
    if (detail::ops_hooks.axis_ranks(t, axis) > 1 && (sbp[axis].is_partial() || (sbp[axis].is_split() && sbp[axis].dim == inner)))
      return true;
  return false;
}

}  // namespace

Tensor matmul_nt(const Tensor& a, const Tensor& b, const Tensor& bias) {
  // Deterministic mode adds the bias to the finished sum. Where the product would come out
  // partial, that is a separate add after the sum (inside the GEMM the bias would be added to one
  // rank's partial product, out of the sum's fixed order); elsewhere the product's kernel adds it
  // as it stores each sum, the same bits in one pass.
  if (bias.defined() && deterministic() &&
      (in_pieces(a, a.dim() - 1) || in_pieces(b, b.dim() - 1) || in_pieces(bias, -1)))
    return add(matmul_nt(a, b), bias);
  if (!bias.defined()) return apply_op<Matmul>({a, b}, /*transpose_b=*/true, /*has_bias=*/false);
  return apply_op<Matmul>({a, b, bias}, /*transpose_b=*/true, /*has_bias=*/true);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  GLOBE_CHECK(weight.dim() == 2, "[linear] weight must be [out_features, in_features], got ", describe(weight));
  GLOBE_CHECK(x.dim() >= 1 && x.shape().back() == weight.shape()[1], "[linear] input ", describe(x),
              " does not end in in_features=", weight.shape()[1], " of weight ", describe(weight));
  GLOBE_CHECK(!bias.defined() || bias.shape() == Shape{weight.shape()[0]}, "[linear] bias ", describe(bias),
              " is not [out_features=", weight.shape()[0], "]");
  return x.dim() == 1 ? squeeze(matmul_nt(unsqueeze(x, 0), weight, bias), 0) : matmul_nt(x, weight, bias);
}

}  // namespace globe
