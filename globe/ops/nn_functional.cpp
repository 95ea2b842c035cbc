// Neural-network functions: softmax family, embedding, layer_norm, dropout and losses.
#include "globe/core/random.h"
#include <algorithm>

#include "globe/kernels/elementwise.h"
#include "globe/kernels/nn.h"
#include "globe/kernels/random_fill.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {

namespace {

class Softmax final : public Op {
 public:
  Softmax(int64_t dim, bool log) : dim_(dim), log_(log) {}
  std::string name() const override { return log_ ? "log_softmax" : "softmax"; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    const int64_t nd = int64_t(in[0].shape.size()), d = normalize_dim(dim_, nd, "softmax");
    std::vector<SbpSignature> s;
    for (int64_t i = 0; i < nd; ++i)
      if (i != d) s.push_back({{sbp::split(i)}, sbp::split(i)});
    return s;
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    normalize_dim(dim_, in[0].shape, log_ ? "log_softmax" : "softmax");
    GLOBE_CHECK(is_floating(in[0].dtype), "[", name(), "] expects a floating tensor, got ",
                dtype_name(in[0].dtype));
    return in[0];
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::softmax(in[0], normalize_dim(dim_, in[0].dim(), "softmax"), log_);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const Tensor& y, const Tensor& g,
                          const std::vector<bool>&) const override {
    // softmax:      dx = y * (g - sum(g * y))
    // log_softmax:  dx = g - exp(y) * sum(g)
    if (log_) return {sub(g, mul(exp(y), sum(g, {dim_}, true)))};
    return {mul(y, sub(g, sum(mul(g, y), {dim_}, true)))};
  }

 private:
  int64_t dim_;
  bool log_;
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
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::embedding_backward(in[0], in[1], vocab_);
  }

 private:
  int64_t vocab_;
};

// inputs: weight [V, D], indices [...].
class Embedding final : public Op {
 public:
  std::string name() const override { return "embedding"; }
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
    return kernels::embedding(in[0], in[1], first, vocab);
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
    GLOBE_CHECK(is_floating(in[0].dtype) && in[0].shape.size() >= 2, "[causal_fill] expects a floating tensor of ",
                "2 or more dims [..., rows, cols], got ", dtype_name(in[0].dtype), shape_str(in[0].shape));
    return in[0];
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
    Tensor out = Tensor::uninitialized(x.shape(), x.dtype());
    kernels::copy_into(out, x);
    const int64_t rows = x.shape()[size_t(nd - 2)], cols = x.shape()[size_t(nd - 1)];
    const int64_t mats = rows * cols == 0 ? 0 : out.numel() / (rows * cols);
    visit_floating(x.dtype(), "causal_fill", [&](auto tag) {
      using T = decltype(tag);
      T* p = out.data<T>();
      for (int64_t b = 0; b < mats; ++b)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = std::max<int64_t>(0, i + r0 - c0 + 1); j < cols; ++j) p[(b * rows + i) * cols + j] = T(value_);
      return 0;
    });
    return out;
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {apply_op<CausalFill>({g}, 0.0)};
  }

 private:
  double value_;
};

}  // namespace

Tensor causal_fill(const Tensor& x, double value) { return apply_op<CausalFill>({x}, value); }

Tensor softmax(const Tensor& a, int64_t dim) { return apply_op<Softmax>({a}, dim, false); }
Tensor log_softmax(const Tensor& a, int64_t dim) { return apply_op<Softmax>({a}, dim, true); }

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
  // Composite: every step is a differentiable op, so the backward follows (and so do global
  // layouts split along non-normalised dims).
  Tensor centered = sub(a, mean(a, dims, true));
  Tensor var = mean(mul(centered, centered), dims, true);
  Tensor y = mul(centered, pow(add(var, eps), -0.5));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y;
}

Tensor dropout(const Tensor& a, double p, bool training) {
  GLOBE_CHECK(p >= 0.0 && p < 1.0, "[dropout] probability must be in [0, 1), got ", p);
  if (!training || p == 0.0) return a;
  // The mask depends only on the logical position, so every layout drops the same elements.
  const RandomStream stream = next_random_stream();
  auto fill = [&](const Tensor& shard, const Shape& start) {
    kernels::fill_dropout_mask(shard, stream, a.shape(), start, p);
  };
  Tensor mask;
  if (a.is_global()) {
    mask = detail::g_fill_like_global(a, fill);
  } else {
    mask = Tensor::uninitialized(a.shape(), a.dtype());
    fill(mask, Shape(a.dim(), 0));
  }
  return mul(a, mask);
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  GLOBE_CHECK(input.shape() == target.shape(), "[mse_loss] input ", describe(input), " and target ",
              describe(target), " shapes differ");
  Tensor d = sub(input, target);
  return mean(mul(d, d));
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
  GLOBE_CHECK(logits.dim() >= 1, "[cross_entropy] logits must have a class dim, got ", describe(logits));
  GLOBE_CHECK(target.dtype() == kInt64, "[cross_entropy] target must hold int64 class indices, got ",
              describe(target));
  GLOBE_CHECK(Shape(logits.shape().begin(), logits.shape().end() - 1) == target.shape(),
              "[cross_entropy] logits ", describe(logits), " (classes last) and target ",
              describe(target), " shapes do not match");
  Tensor logp = log_softmax(logits, -1);
  return neg(mean(gather(logp, -1, unsqueeze(target, -1))));
}

}  // namespace globe
