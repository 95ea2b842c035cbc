// matmul: [..., n, k] @ [..., k, m] -> [..., n, m], batch dims broadcast.
#include "globe/core/node.h"
#include "globe/kernels/matmul.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {

namespace {

// Whether b is a transposed view (Linear's weight^T): decided from the graph, not from strides,
// so every rank of a global op decides alike (shard strides can differ with uneven shards).
bool stored_transposed(const Tensor& b) {
  return b.dim() == 2 && b.grad_fn() != nullptr && b.grad_fn()->name() == "permute";
}

class Matmul final : public Op {
 public:
  std::string name() const override { return "matmul"; }
  // Rows of a -> rows of out; columns of b -> columns of out; the inner dim split on both gives
  // partial products; batch dims split alike on both (or on one side when the other broadcasts).
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    const int64_t na = int64_t(in[0].shape.size()), nb = int64_t(in[1].shape.size());
    const Shape out = infer(in).shape;
    const int64_t no = int64_t(out.size());
    std::vector<SbpSignature> s = {
        {{sbp::split(na - 2), sbp::broadcast}, sbp::split(no - 2)},
        {{sbp::broadcast, sbp::split(nb - 1)}, sbp::split(no - 1)},
        {{sbp::split(na - 1), sbp::split(nb - 2)}, sbp::partial_sum},
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
    GLOBE_CHECK(a.size() >= 2 && b.size() >= 2, "[matmul] needs tensors of at least 2 dims, got ",
                shape_str(a), " and ", shape_str(b));
    GLOBE_CHECK(in[0].dtype == in[1].dtype, "[matmul] dtype mismatch: ", dtype_name(in[0].dtype),
                shape_str(a), " @ ", dtype_name(in[1].dtype), shape_str(b));
    GLOBE_CHECK(is_floating(in[0].dtype), "[matmul] expects floating tensors, got ",
                dtype_name(in[0].dtype));
    GLOBE_CHECK(a.back() == b[b.size() - 2], "[matmul] inner dims differ: ", shape_str(a), " @ ",
                shape_str(b));
    Shape out = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), "matmul");
    out.push_back(a[a.size() - 2]);
    out.push_back(b.back());
    return {out, in[0].dtype};
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    return kernels::matmul(in[0], in[1], args.out.shape);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>& needs) const override {
    const Tensor &a = in[0], &b = in[1];
    Tensor ga, gb;
    if (needs[0]) ga = sum_to(matmul(g, transpose(b, -1, -2)), a.shape());
    if (needs[1]) {
      if (b.dim() == 2) {
        // Fold a's batch dims into its rows: one gemm instead of a batch summed afterwards.
        const int64_t k = a.shape().back(), m = g.shape().back();
        const Tensor a2 = reshape(a, {-1, k}), g2 = reshape(g, {-1, m});
        // b [k, m] stored transposed (Linear's weight^T): compute the gradient in that storage
        // order, [m, k] = g2^T a2, so the weight's own gradient needs no transposing copy.
        gb = stored_transposed(b) ? transpose(matmul(transpose(g2, 0, 1), a2), 0, 1)
                                  : matmul(transpose(a2, 0, 1), g2);
      } else {
        gb = sum_to(matmul(transpose(a, -1, -2), g), b.shape());
      }
    }
    return {ga, gb};
  }
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  // 1-D operands follow numpy: a vector is a row (left) or a column (right), removed afterwards;
  // two vectors give their dot product as a 0-d tensor.
  if (a.dim() == 1 && b.dim() == 1) return reshape(matmul(unsqueeze(a, 0), unsqueeze(b, 1)), {});
  if (a.dim() == 1) return squeeze(matmul(unsqueeze(a, 0), b), -2);
  if (b.dim() == 1) return squeeze(matmul(a, unsqueeze(b, 1)), -1);
  return apply_op<Matmul>({a, b});
}

}  // namespace globe
