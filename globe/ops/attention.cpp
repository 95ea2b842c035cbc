// Fused causal self-attention on packed q, k, v.
#include <memory>

#include "globe/core/grad_mode.h"
#include "globe/kernels/device_kernels.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"

namespace globe {

namespace {

// Any split of a batch dim (the dims between the 3 and [T, D]); T and D whole on every rank. The
// packed operand comes first, its batch dims one later than in the [..., T, D] operands; the
// output is packed when there are two inputs (the backward: qkv, gy -> dqkv), else not (y).
std::vector<SbpSignature> batch_signatures(int64_t packed_ndim, size_t n_inputs) {
  std::vector<SbpSignature> s;
  for (int64_t d = 1; d + 2 < packed_ndim; ++d) {
    std::vector<Sbp> in(n_inputs, sbp::split(d - 1));
    in[0] = sbp::split(d);
    s.push_back({in, n_inputs == 1 ? sbp::split(d - 1) : sbp::split(d)});
  }
  return s;
}

// What the forward keeps for the backward: the probabilities it computed and the local input it
// computed them from, held so that no other tensor can take its memory meanwhile. The backward
// uses them only for that very input (a layout chosen differently, or a boxed copy, recomputes).
struct SavedProbs {
  Tensor qkv, probs;
};

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.offset() == b.offset() && a.shape() == b.shape() &&
         a.strides() == b.strides();
}

class CausalAttentionBackward final : public Op {
 public:
  CausalAttentionBackward(double scale, std::shared_ptr<const SavedProbs> saved)
      : scale_(scale), saved_(std::move(saved)) {}
  std::string name() const override { return "causal_attention_backward"; }
  bool differentiable() const override { return false; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return in[0]; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return batch_signatures(int64_t(in[0].shape.size()), 2);
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    const Tensor probs = saved_ && same_view(saved_->qkv, in[0]) ? saved_->probs : Tensor();
    return kernels::kernels_for(in[0]).causal_attention_backward(in[0], in[1], scale_, probs);
  }

 private:
  double scale_;
  std::shared_ptr<const SavedProbs> saved_;
};

class CausalAttention final : public Op {
 public:
  explicit CausalAttention(double scale) : scale_(scale) {}
  std::string name() const override { return "causal_attention"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    const Shape& s = in[0].shape;
    GLOBE_CHECK(is_floating(in[0].dtype) && s.size() >= 3 && s[0] == 3, "[causal_attention] expects packed ",
                "q, k, v: a floating tensor [3, ..., T, D], got ", dtype_name(in[0].dtype), shape_str(s));
    return {Shape(s.begin() + 1, s.end()), in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return batch_signatures(int64_t(in[0].shape.size()), 1);
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    if (!grad_enabled()) return kernels::kernels_for(in[0]).causal_attention(in[0], scale_, nullptr);
    auto saved = std::make_shared<SavedProbs>();
    saved->qkv = in[0];
    Tensor y = kernels::kernels_for(in[0]).causal_attention(in[0], scale_, &saved->probs);
    saved_ = std::move(saved);
    return y;
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {apply_op<CausalAttentionBackward>({in[0], g}, scale_, saved_)};
  }

 private:
  double scale_;
  mutable std::shared_ptr<const SavedProbs> saved_;  // set by compute (the forward), read by vjp
};

}  // namespace

Tensor causal_attention(const Tensor& qkv, double scale) { return apply_op<CausalAttention>({qkv}, scale); }

}  // namespace globe
