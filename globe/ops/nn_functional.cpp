// Neural-network functions: softmax family, embedding, layer_norm, dropout and losses.
#include <algorithm>
#include <limits>

#include "globe/core/grad_mode.h"
#include "globe/core/random.h"

#include "globe/kernels/device_kernels.h"
#include "globe/kernels/tree_sum.h"
#include "globe/ops/hooks.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {

namespace {

// Split along any dim but the last, for ops that work on whole rows of the last dim; `partial_at`
// names an input the op is linear in (its partial sum gives a partial output, the others B).
std::vector<SbpSignature> row_signatures(size_t n_inputs, int64_t nd, int partial_at = -1) {
  std::vector<SbpSignature> s;
  for (int64_t i = 0; i + 1 < nd; ++i) s.push_back({std::vector<Sbp>(n_inputs, sbp::split(i)), sbp::split(i)});
  if (partial_at >= 0) sbp_rules::add_partial_at(s, n_inputs, size_t(partial_at));
  return s;
}

// The metadata of an op on a floating [..., rows, cols] tensor that keeps it (the causal ops).
TensorMeta matrices_meta(const TensorMeta& m, const char* op) {
  GLOBE_CHECK(is_floating(m.dtype) && m.shape.size() >= 2, "[", op, "] expects a floating tensor of ",
              "2 or more dims [..., rows, cols], got ", dtype_name(m.dtype), shape_str(m.shape));
  return m;
}

// Softmax's backward over the last dim, one fused pass per row: dx = scale * y * (g - sum(g * y))
// (scale: what the softmax's input was multiplied by, 1 for softmax itself).
class SoftmaxBackwardLast final : public Op {
 public:
  explicit SoftmaxBackwardLast(double scale = 1.0) : scale_(scale) {}
  std::string name() const override { return "softmax_backward"; }
  bool differentiable() const override { return false; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return row_signatures(2, int64_t(in[0].shape.size()), 1);
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return in[0]; }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::kernels_for(in[0]).softmax_backward_last(in[0], in[1], scale_);
  }

 private:
  double scale_;
};

// Row signatures of an op whose first `n_rows` inputs are [..., n] and the rest [n] vectors
// (layer norm's weight and bias), which stay B: split along any dim but the last.
std::vector<SbpSignature> row_signatures_with_vectors(size_t n_rows, size_t n_vectors, int64_t nd) {
  std::vector<SbpSignature> s = row_signatures(n_rows, nd);
  for (SbpSignature& sig : s) sig.inputs.insert(sig.inputs.end(), n_vectors, sbp::broadcast);
  return s;
}

// The name of a normalisation over the last dim: layer norm (centred) or RMS norm.
std::string norm_name(bool centered, const char* suffix = "") {
  return std::string(centered ? "layer_norm" : "rms_norm") + suffix;
}

// Layer (or RMS) norm's backward for x: (g, x[, weight]) -> dx, mean and rstd recomputed per row;
// linear in g.
class NormalizeLastBackward final : public Op {
 public:
  NormalizeLastBackward(double eps, bool centered, bool has_weight)
      : eps_(eps), centered_(centered), has_weight_(has_weight) {}
  std::string name() const override { return norm_name(centered_, "_backward"); }
  bool differentiable() const override { return false; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s = row_signatures_with_vectors(2, has_weight_ ? 1 : 0, int64_t(in[0].shape.size()));
    sbp_rules::add_partial_at(s, in.size(), 0);
    return s;
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return in[1]; }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::kernels_for(in[0]).normalize_last_backward(in[0], in[1], eps_, centered_,
                                                               has_weight_ ? in[2] : Tensor());
  }

 private:
  double eps_;
  bool centered_, has_weight_;
};

// Deterministic mode's piece dims (Op::piece_dims) of an op whose two inputs share the row dims
// 0..last, summed as one run; none where there are no row dims (last < 0).
std::vector<Op::PieceDims> shared_rows_run(int64_t last) {
  if (last < 0) return {};
  return {{0, 0, last}, {1, 0, last}};
}

// Layer (or RMS) norm's weight gradient: (g, x) -> sum over rows of g * xhat, [n]. Rows split give
// partial sums; linear in g. In deterministic mode the rows (all leading dims, as one flattened
// index) are summed in their leaves' tree, as sum() sums a run of dims, so only a split of dim 0
// leaves partial sums that are subtrees of that order.
class NormalizeLastWeightGrad final : public Op {
 public:
  NormalizeLastWeightGrad(double eps, bool centered) : eps_(eps), centered_(centered) {}
  std::string name() const override { return norm_name(centered_, "_weight_grad"); }
  bool differentiable() const override { return false; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    const int64_t split_dims = deterministic() ? 1 : int64_t(in[0].shape.size()) - 1;
    for (int64_t i = 0; i < split_dims; ++i) s.push_back({{sbp::split(i), sbp::split(i)}, sbp::partial_sum});
    sbp_rules::add_partial_at(s, 2, 0);
    return s;
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return {{in[1].shape.back()}, in[1].dtype}; }
  bool tree_partials() const override { return true; }
  std::vector<PieceDims> piece_dims(const std::vector<TensorMeta>& in) const override {
    return shared_rows_run(int64_t(in[0].shape.size()) - 2);
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const auto& k = kernels::kernels_for(in[0]);
    if (!deterministic()) return k.normalize_last_weight_grad(in[0], in[1], eps_, centered_);
    Tensor r = k.binary(kernels::BinaryKind::mul, in[0], k.normalize_last(in[1], eps_, centered_, Tensor(), Tensor()),
                        in[0].shape());
    const int64_t rows_last = r.dim() - 2;
    if (rows_last >= 0 && r.numel() > 0)
      r = kernels::leaf_sum(r, 0, args.leaf_length(name().c_str(), "summed rows", 0, 0, in[0], rows_last), rows_last);
    else if (rows_last >= 0)
      return Tensor::empty(args.out.shape, r.dtype(), r.device());  // zeros: no rows
    return Tensor::view_of(r, args.out.shape, contiguous_strides(args.out.shape), r.offset());
  }

 private:
  double eps_;
  bool centered_;
};

// Layer norm over the last dim with its affine part, one fused kernel (the composite form is
// nine ops forward and more backward): inputs x[, weight][, bias], weight and bias [n] and B; any
// layout of x split along the other dims. Not centred, RMS norm (Llama's; six ops composite).
class NormalizeLast final : public Op {
 public:
  NormalizeLast(double eps, bool centered, bool has_weight, bool has_bias)
      : eps_(eps), centered_(centered), has_weight_(has_weight), has_bias_(has_bias) {}
  std::string name() const override { return norm_name(centered_); }
  bool vjp_reads_output() const override { return false; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return row_signatures_with_vectors(1, in.size() - 1, int64_t(in[0].shape.size()));
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(is_floating(in[0].dtype), "[", name(), "] expects a floating tensor, got ", dtype_name(in[0].dtype));
    for (size_t i = 1; i < in.size(); ++i)
      GLOBE_CHECK(in[i].dtype == in[0].dtype && in[i].shape == Shape{in[0].shape.back()}, "[", name(), "] ",
                  (has_weight_ && i == 1) ? "weight " : "bias ", dtype_name(in[i].dtype), shape_str(in[i].shape),
                  " does not match the input's last dim: ", dtype_name(in[0].dtype), shape_str(in[0].shape));
    return in[0];
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::kernels_for(in[0]).normalize_last(in[0], eps_, centered_, has_weight_ ? in[1] : Tensor(),
                                                      has_bias_ ? in.back() : Tensor());
  }
  // dx through the normalisation (g scaled by the weight inside the kernel), the weight's
  // gradient sum(g * xhat), the bias's sum(g), each over the rows.
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>& needs) const override {
    const Tensor& x = in[0];
    std::vector<Tensor> grads(in.size());
    if (needs[0]) {
      std::vector<Tensor> args = {g, x};
      if (has_weight_) args.push_back(in[1]);
      grads[0] = apply_op<NormalizeLastBackward>(args, eps_, centered_, has_weight_);
    }
    if (has_weight_ && needs[1]) grads[1] = apply_op<NormalizeLastWeightGrad>({g, x}, eps_, centered_);
    if (has_bias_ && needs.back()) grads.back() = sum_to(g, in.back().shape());
    return grads;
  }

 private:
  double eps_;
  bool centered_, has_weight_, has_bias_;
};

class Softmax final : public Op {
 public:
  Softmax(int64_t dim, bool log) : dim_(dim), log_(log) {}  // dim normalised
  std::string name() const override { return log_ ? "log_softmax" : "softmax"; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()), dim_);
    return s;
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(is_floating(in[0].dtype), "[", name(), "] expects a floating tensor, got ",
                dtype_name(in[0].dtype));
    return in[0];
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::kernels_for(in[0]).softmax(in[0], dim_, log_);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const Tensor& y, const Tensor& g,
                          const std::vector<bool>&) const override {
    // softmax:      dx = y * (g - sum(g * y))
    // log_softmax:  dx = g - exp(y) * sum(g)
    if (log_) return {sub(g, mul(exp(y), sum(g, {dim_}, true)))};
    if (dim_ == y.dim() - 1) return {apply_op<SoftmaxBackwardLast>({y, g})};
    return {mul(y, sub(g, sum(mul(g, y), {dim_}, true)))};
  }

 private:
  int64_t dim_;
  bool log_;
};

// Softmax over the last dim of x * scale, columns after each row's own index masked (Megatron's
// fused scale-mask-softmax for causal attention): one pass forward, one backward, where scale,
// causal_fill and softmax take three each. Any layout split along a dim but the last; a shard of
// rows learns which rows it holds from its block start.
class CausalSoftmax final : public Op {
 public:
  explicit CausalSoftmax(double scale) : scale_(scale) {}
  std::string name() const override { return "causal_softmax"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    return matrices_meta(in[0], "causal_softmax");
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return row_signatures(1, int64_t(in[0].shape.size()));
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const size_t rows_dim = size_t(in[0].dim() - 2);
    const int64_t row0 = args.in_block_starts.empty() ? 0 : args.in_block_starts[0][rows_dim];
    return kernels::kernels_for(in[0]).causal_softmax_last(in[0], scale_, row0);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const Tensor& y, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {apply_op<SoftmaxBackwardLast>({y, g}, scale_)};  // masked entries: y = 0, so dx = 0
  }

 private:
  double scale_;
};

class EmbeddingBackward final : public Op {
 public:
  explicit EmbeddingBackward(int64_t vocab) : vocab_(vocab) {}
  std::string name() const override { return "embedding_backward"; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    const int64_t ni = int64_t(in[1].shape.size());
    std::vector<SbpSignature> s;
    for (int64_t i = 0; i < ni; ++i) s.push_back({{sbp::split(i), sbp::split(i)}, sbp::partial_sum});
    s.push_back({{sbp::split(ni), sbp::broadcast}, sbp::split(1)});
    s.push_back({{sbp::partial_sum, sbp::broadcast}, sbp::partial_sum});
    return s;
  }
  bool differentiable() const override { return false; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    return {{vocab_, in[0].shape.back()}, in[0].dtype};
  }
  // Deterministic mode: the rows (the flattened index of indices) are summed in their leaves'
  // tree (kernels::embedding_backward_tree), so a split of the rows' first dim gives subtrees.
  bool tree_partials() const override { return true; }
  std::vector<PieceDims> piece_dims(const std::vector<TensorMeta>& in) const override {
    return shared_rows_run(int64_t(in[1].shape.size()) - 1);
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const int64_t last = in[1].dim() - 1;
    if (!deterministic() || last < 0 || in[1].numel() == 0)
      return kernels::kernels_for(in[0]).embedding_backward(in[0], in[1], vocab_);
    return kernels::embedding_backward_tree(in[0], in[1], vocab_,
                                            args.leaf_length("embedding_backward", "rows", 1, 0, in[1], last));
  }

 private:
  int64_t vocab_;
};

// inputs: weight [V, D], indices [...].
class Embedding final : public Op {
 public:
  std::string name() const override { return "embedding"; }
  bool vjp_reads_output() const override { return false; }
  // Index blocks -> output blocks; a vocab-split table gives each rank the rows it holds
  // (others zero): partial sums; a dim-split table gives the output's last dim split.
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    const int64_t ni = int64_t(in[1].shape.size());
    std::vector<SbpSignature> s;
    for (int64_t i = 0; i < ni; ++i) s.push_back({{sbp::broadcast, sbp::split(i)}, sbp::split(i)});
    s.push_back({{sbp::split(0), sbp::broadcast}, sbp::partial_sum});
    s.push_back({{sbp::split(1), sbp::broadcast}, sbp::split(ni)});
    s.push_back({{sbp::partial_sum, sbp::broadcast}, sbp::partial_sum});
    return s;
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(in[0].shape.size() == 2, "[embedding] weight must be 2-D [vocab, dim], got ",
                shape_str(in[0].shape));
    GLOBE_CHECK(in[1].dtype == kInt64, "[embedding] indices must be int64, got ",
                dtype_name(in[1].dtype), shape_str(in[1].shape));
    Shape out = in[1].shape;
    out.push_back(in[0].shape[1]);
    return {out, in[0].dtype};
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    // This rank holds rows [first, first + rows) of the table (all of them unless vocab-split).
    const int64_t first = args.in_block_starts.empty() ? 0 : args.in_block_starts[0][0];
    const int64_t vocab = args.in_global_shapes.empty() ? in[0].shape()[0] : args.in_global_shapes[0][0];
    return kernels::kernels_for(in[0]).embedding(in[0], in[1], first, vocab);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {apply_op<EmbeddingBackward>({g, in[1]}, in[0].shape()[0]), Tensor()};
  }
};

// x[..., i, j] = value where j > i. Any split works: the kernel knows where its block starts.
class CausalFill final : public Op {
 public:
  explicit CausalFill(double value) : value_(value) {}
  std::string name() const override { return "causal_fill"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    return matrices_meta(in[0], "causal_fill");
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()));
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const Tensor& x = in[0];
    const int64_t nd = x.dim();
    const int64_t r0 = args.in_block_starts.empty() ? 0 : args.in_block_starts[0][size_t(nd - 2)];
    const int64_t c0 = args.in_block_starts.empty() ? 0 : args.in_block_starts[0][size_t(nd - 1)];
    return kernels::kernels_for(x).causal_fill(x, value_, r0, c0);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {apply_op<CausalFill>({g}, 0.0)};
  }

 private:
  double value_;
};

// The column offset of a shard's block in its logical tensor (0 for a local op).
int64_t column_offset(const ComputeArgs& args, size_t input) {
  return args.in_block_starts.empty() ? 0 : args.in_block_starts[input].back();
}

// grad [...], index [...], like [..., C] (only its block position is used) -> [..., C]: the
// gradient at each row's index, zeros elsewhere. A class-split output fills its own columns.
class PickBackward final : public Op {
 public:
  std::string name() const override { return "pick_backward"; }
  bool differentiable() const override { return false; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return {in[2].shape, in[0].dtype}; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    const int64_t nd = int64_t(in[2].shape.size());
    std::vector<SbpSignature> s;
    for (int64_t i = 0; i + 1 < nd; ++i) s.push_back({{sbp::split(i), sbp::split(i), sbp::split(i)}, sbp::split(i)});
    s.push_back({{sbp::broadcast, sbp::broadcast, sbp::split(nd - 1)}, sbp::split(nd - 1)});
    s.push_back({{sbp::partial_sum, sbp::broadcast, sbp::broadcast}, sbp::partial_sum});
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    return kernels::kernels_for(in[0]).pick_backward(in[0], in[1], args.out.shape, column_offset(args, 2));
  }
};

// x [..., C], index [...] -> x[..., index]. Class-split x: each rank picks what it holds, the
// others contribute 0 (a partial sum), so the classes never need to be gathered.
class Pick final : public Op {
 public:
  std::string name() const override { return "pick"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(!in[0].shape.empty() && is_floating(in[0].dtype), "[pick] x must be a floating tensor [..., classes], got ",
                dtype_name(in[0].dtype), shape_str(in[0].shape));
    GLOBE_CHECK(in[1].dtype == kInt64 && Shape(in[0].shape.begin(), in[0].shape.end() - 1) == in[1].shape,
                "[pick] index must be int64 of x's shape without its last dim: x ", shape_str(in[0].shape),
                ", index ", dtype_name(in[1].dtype), shape_str(in[1].shape));
    return {in[1].shape, in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    const int64_t nd = int64_t(in[0].shape.size());
    std::vector<SbpSignature> s;
    for (int64_t i = 0; i + 1 < nd; ++i) s.push_back({{sbp::split(i), sbp::split(i)}, sbp::split(i)});
    s.push_back({{sbp::split(nd - 1), sbp::broadcast}, sbp::partial_sum});
    s.push_back({{sbp::partial_sum, sbp::broadcast}, sbp::partial_sum});
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const int64_t classes = args.in_global_shapes.empty() ? in[0].shape().back() : args.in_global_shapes[0].back();
    return kernels::kernels_for(in[0]).pick(in[0], in[1], column_offset(args, 0), classes);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {apply_op<PickBackward>({g, in[1], in[0]}), Tensor()};
  }
};

}  // namespace

Tensor pick(const Tensor& x, const Tensor& index) { return apply_op<Pick>({x, index}); }

Tensor causal_fill(const Tensor& x, double value) { return apply_op<CausalFill>({x}, value); }

Tensor causal_softmax(const Tensor& scores, double scale) { return apply_op<CausalSoftmax>({scores}, scale); }

Tensor softmax(const Tensor& a, int64_t dim) { return apply_op<Softmax>({a}, dim_of(a, dim, "softmax"), false); }
Tensor log_softmax(const Tensor& a, int64_t dim) {
  return apply_op<Softmax>({a}, dim_of(a, dim, "log_softmax"), true);
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return apply_op<Embedding>({weight, indices});
}

Tensor layer_norm(const Tensor& a, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  const int64_t k = int64_t(normalized_shape.size());
  GLOBE_CHECK(k >= 1 && k <= a.dim() &&
                  Shape(a.shape().end() - k, a.shape().end()) == normalized_shape,
              "[layer_norm] normalized_shape ", shape_str(normalized_shape),
              " is not a suffix of the input shape ", shape_str(a.shape()));
  std::vector<int64_t> dims;
  for (int64_t i = a.dim() - k; i < a.dim(); ++i) dims.push_back(i);
  if (k == 1) {
    std::vector<Tensor> in = {a};
    if (weight.defined()) in.push_back(weight);
    if (bias.defined()) in.push_back(bias);
    return apply_op<NormalizeLast>(in, eps, true, weight.defined(), bias.defined());
  }
  // Several normalised dims: composite, every step a differentiable op, so the backward follows
  // (and so do global layouts split along non-normalised dims).
  Tensor centered = sub(a, mean(a, dims, true));
  Tensor var = mean(mul(centered, centered), dims, true);
  Tensor y = mul(centered, pow(add(var, eps), -0.5));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y;
}

Tensor rms_norm(const Tensor& a, const Tensor& weight, double eps) {
  GLOBE_CHECK(a.dim() >= 1, "[rms_norm] input ", describe(a), " has no dim to normalise");
  GLOBE_CHECK(!weight.defined() || (weight.dim() == 1 && weight.shape()[0] == a.shape().back()), "[rms_norm] weight ",
              describe(weight), " does not match the last dim of the input ", describe(a));
  GLOBE_CHECK(is_floating(a.dtype()), "[rms_norm] input ", describe(a), " is not floating");
  // One fused op; a 16-bit input is normalised in float32 (the dispatcher's rule for 16-bit
  // entries) and rounded, and then multiplied by the weight, as Hugging Face rounds before the weight.
  const bool fuse_weight = weight.defined() && weight.dtype() == a.dtype() && itemsize(a.dtype()) >= 4;
  if (fuse_weight) return apply_op<NormalizeLast>({a, weight}, eps, false, true, false);
  const Tensor y = apply_op<NormalizeLast>({a}, eps, false, false, false);
  return weight.defined() ? mul(weight, y) : y;
}


Tensor dropout(const Tensor& a, double p, bool training) {
  GLOBE_CHECK(p >= 0.0 && p < 1.0, "[dropout] probability must be in [0, 1), got ", p);
  if (!training || p == 0.0) return a;
  // The mask depends only on the logical position, so every layout drops the same elements.
  const RandomStream stream = a.is_global() ? next_random_stream() : next_local_random_stream();
  // Drawn on the mask's device, with the CPU's generator: the same mask on every device.
  auto fill = [&](const Tensor& shard, const Shape& start) {
    kernels::kernels_for(shard).random_fill(kernels::RandomKind::dropout_mask, shard, stream, a.shape(), start,
                                            {.p = p});
  };
  Tensor mask;
  if (a.is_global()) {
    mask = detail::ops_hooks.fill_like_global(a, fill);
  } else {
    mask = Tensor::uninitialized(a.shape(), a.dtype(), a.device());
    fill(mask, Shape(a.dim(), 0));
  }
  return mul(a, mask);
}

Reduction reduction_of(const std::string& name, const char* op) {
  if (name == "mean") return Reduction::mean;
  if (name == "sum") return Reduction::sum;
  if (name == "none") return Reduction::none;
  GLOBE_FAIL("[", op, "] reduction must be 'mean', 'sum' or 'none', got '", name, "'");
}

namespace {
Tensor reduce_loss(const Tensor& losses, Reduction reduction) {
  switch (reduction) {
    case Reduction::mean: return mean(losses);
    case Reduction::sum: return sum(losses);
    case Reduction::none: break;
  }
  return losses;
}
}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target) { return mse_loss_with(input, target, Reduction::mean); }

Tensor mse_loss_with(const Tensor& input, const Tensor& target, Reduction reduction) {
  GLOBE_CHECK(input.shape() == target.shape(), "[mse_loss] input ", describe(input), " and target ",
              describe(target), " shapes differ");
  Tensor d = sub(input, target);
  return reduce_loss(mul(d, d), reduction);
}

namespace {

// Whether a global tensor is split along its last dim on some mesh axis.
bool split_last(const Tensor& t) {
  if (!t.is_global()) return false;
  for (const Sbp& s : t.sbp())
    if (s.is_split() && s.dim == t.dim() - 1) return true;
  return false;
}

// The maximum over the last dim, as a constant (no gradient). Class-split logits are not gathered
// for it: each rank's maximum over the classes it holds becomes one column of a small
// [..., ranks along the class split] tensor, whose maximum is taken (an all-gather of rows x ranks).
// Other logits (deterministic mode's, and partial ones) take max as it is, and so does a rank
// outside the logits' placement (it computes nothing, and has no shard to build the small one from).
Tensor row_max(const Tensor& x) {
  NoGradGuard no_grad;
  if (!split_last(x) || x.sbp().any_partial() || !detail::ops_hooks.holds_shard(x)) return max(x, {-1}, true);
  const Tensor local = x.to_local();
  Shape one = local.shape();
  one.back() = 1;
  const Tensor mine = local.shape().back() > 0 ? max(local, {-1}, true)
                                               : full(one, -std::numeric_limits<double>::infinity(), local.dtype(),
                                                      local.device());  // made where the shard lives
  return max(mine.to_global(x.placement(), x.sbp()), {-1}, true);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
  return cross_entropy_with(logits, target, Reduction::mean);
}

Tensor cross_entropy_with(const Tensor& logits, const Tensor& target, Reduction reduction) {
  GLOBE_CHECK(logits.dim() >= 1, "[cross_entropy] logits must have a class dim, got ", describe(logits));
  GLOBE_CHECK(target.dtype() == kInt64, "[cross_entropy] target must hold int64 class indices, got ",
              describe(target));
  const Shape rows(logits.shape().begin(), logits.shape().end() - 1);
  // OneFlow's: a target with the class dim kept as 1 ([N, 1] for logits [N, C]) is the same
  // indices (its cross_entropy flattens the target; only this shape is taken here, so a target of
  // another shape that merely has as many elements is still refused). reduction none gives the
  // target's shape, as OneFlow's.
  if (target.dim() == logits.dim() && target.shape().back() == 1 &&
      Shape(target.shape().begin(), target.shape().end() - 1) == rows) {
    const Tensor per = cross_entropy_with(logits, squeeze(target, -1), reduction);
    return reduction == Reduction::none ? unsqueeze(per, -1) : per;
  }
  GLOBE_CHECK(rows == target.shape(),
              "[cross_entropy] logits ", describe(logits), " (classes last) and target ",
              describe(target), " shapes do not match");
  // Deterministic mode takes the class-split form on every layout, one process included:
  // log_softmax's kernel sums the exponentials in its own order, which no split of the classes
  // follows, while the form below sums them with `sum`, whose order the mode fixes.
  if (!deterministic() && (!split_last(logits) || logits.sbp().any_partial())) {
    Tensor picked = gather(log_softmax(logits, -1), -1, unsqueeze(target, -1));
    return neg(reduce_loss(reduction == Reduction::none ? squeeze(picked, -1) : picked, reduction));
  }
  // Class-split (vocab-parallel) logits: log-sum-exp from per-row maxima and sums of exponentials,
  // minus the target logit picked where it lives. Communication is O(rows), never O(rows x classes).
  const Tensor shifted = sub(logits, row_max(logits));
  const Tensor lse = log(sum(exp(shifted), {-1}));
  return reduce_loss(sub(lse, pick(shifted, target)), reduction);
}

}  // namespace globe
