#include <span>

#include "globe/base/trace.h"
#include "globe/core/grad_mode.h"
#include "globe/core/node.h"
#include "globe/ops/hooks.h"
#include "globe/ops/op.h"

namespace globe {

std::vector<Tensor> GraphOp::vjp(const std::vector<Tensor>&, const Tensor&, const Tensor&,
                            const std::vector<bool>&) const {
  GLOBE_FAIL("[", name(), "] has no gradient (double backward is not supported)");
}

std::vector<SbpSignature> Op::sbp_signatures(const std::vector<TensorMeta>&, const SbpContext&) const {
  return {};
}

namespace {

class OpNode final : public Node {
 public:
  OpNode(GraphOpPtr op, std::vector<Tensor> inputs, Tensor output, std::vector<Tensor> values)
      : Node(std::move(inputs)), op_(std::move(op)), output_(std::move(output)), values_(std::move(values)) {}
  std::string name() const override { return op_->name(); }
  bool waits_for_peer() const override { return op_->backward_waits_for_peer(read(), output_); }
  std::vector<Tensor> apply(const Tensor& grad, const std::vector<bool>& needs) override {
    std::vector<Tensor> grads = op_->vjp(read(), output_, grad, needs);
    grads.resize(inputs().size());
    return grads;
  }
  void keep_for_weight_pass() override {
    Node::keep_for_weight_pass();
    if (!op_->vjp_reads_output()) output_ = Tensor();
  }
  void release_saved() override {
    Node::release_saved();
    output_ = Tensor();
    values_.clear();
  }

 private:
  // What the backward reads: the inputs, with the values recorded in their place.
  std::vector<Tensor> read() const {
    if (values_.empty()) return inputs();
    std::vector<Tensor> in = inputs();
    for (size_t i = 0; i < in.size() && i < values_.size(); ++i)
      if (values_[i].defined()) in[i] = values_[i];
    return in;
  }

  GraphOpPtr op_;
  Tensor output_;  // detached alias of the forward output: no reference cycle
  std::vector<Tensor> values_;  // empty, or per input: the value the backward reads instead
};

}  // namespace

namespace detail {

void fresh_handle(Tensor& out, std::span<const Tensor> inputs);

std::vector<TensorMeta> metas_of(const std::vector<Tensor>& inputs) {
  std::vector<TensorMeta> metas;
  metas.reserve(inputs.size());
  for (const Tensor& t : inputs) metas.push_back({t.shape(), t.dtype()});
  return metas;
}

void check_devices(const Op& op, const std::vector<Tensor>& inputs) {
  if (inputs.empty()) return;
  const Device device = inputs[0].device();
  for (size_t i = 1; i < inputs.size(); ++i) {
    const Device d = inputs[i].device();
    GLOBE_CHECK(d == device, "[", op.name(), "] expects all tensors on one device, but input 0 is on ", device.str(),
                " and input ", i, " on ", d.str(), " (", describe(inputs[0]), " and ", describe(inputs[i]),
                "); move one with .to(\"", device.str(), "\") or .to(\"", d.str(), "\")");
  }
}

void record_node(const GraphOpPtr& op, const std::vector<Tensor>& inputs, Tensor& out,
                 const std::vector<Tensor>& values) {
  fresh_handle(out, inputs);
  if (!grad_enabled() || !op->differentiable()) return;
  bool any = false;
  for (const Tensor& t : inputs) any |= t.requires_grad();
  if (!any) return;
  out.impl().grad_fn = std::make_shared<OpNode>(op, inputs, out.detach(), values);
  out.impl().requires_grad = true;
}

void record_node(const GraphOpPtr& op, const Tensor& input, Tensor& out) {
  if (grad_enabled() && op->differentiable() && input.requires_grad()) return record_node(op, {input}, out, {});
  fresh_handle(out, {&input, 1});
}

}  // namespace detail

Tensor dispatch(const OpPtr& op, const std::vector<Tensor>& inputs) {
  trace::Span span(trace::Kind::op);
  if (span) span->name = op->name();
  bool any_global = false;
  for (const Tensor& t : inputs) {
    GLOBE_CHECK(t.defined(), "[", op->name(), "] got an undefined tensor as input");
    any_global |= t.is_global();
  }
  if (any_global) {
    return detail::ops_hooks.dispatch_global(op, inputs);
  }
  TensorMeta meta = op->infer(detail::metas_of(inputs));
  detail::check_devices(*op, inputs);
  ComputeArgs args;
  args.out = meta;
  Tensor out = op->compute(inputs, args);
  detail::record_node(op, inputs, out);
  return out;
}

namespace detail {
// `out` made a view of itself when it is one of the inputs; else left alone (no copy of the handle).
void fresh_handle(Tensor& out, std::span<const Tensor> inputs) {
  for (const Tensor& t : inputs)
    if (t.same(out)) {
      out = Tensor::view_of(out, out.shape(), out.strides(), out.offset());
      return;
    }
}
}  // namespace detail

}  // namespace globe
