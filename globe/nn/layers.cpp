#include "globe/nn/layers.h"

#include <optional>

#include "globe/autograd/checkpoint.h"
#include "globe/base/trace.h"
#include "globe/nn/parameter_use.h"

#include "globe/nn/init.h"
#include "globe/ops/ops.h"

namespace globe::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias) {
  GLOBE_CHECK(in_features >= 0 && out_features >= 0, "[Linear] invalid features ", in_features, " -> ",
              out_features);
  weight = init::linear_uniform({out_features, in_features}, in_features);
  register_parameter("weight", weight);
  if (has_bias) {
    bias = init::linear_uniform({out_features}, in_features);
    register_parameter("bias", bias);
  }
}

Tensor UnaryModule::operator()(const Tensor& x) {
  std::optional<trace::Span> span;  // a root module (no name) is the trace's top level
  if (!name().empty()) span.emplace(trace::Kind::module, name());
  if (!recompute_) return call_forward(x);
  return checkpoint([this](const std::vector<Tensor>& in) { return call_forward(in[0]); }, {x}, recompute_label_);
}

Tensor UnaryModule::call_forward(const Tensor& x) {
  if (!transforms_parameters()) return forward(x);
  const Tensor in = cast_input(*this, x);
  return with_parameters_in_use(*this, [&] { return forward(in); });
}

void UnaryModule::set_recompute(bool on, std::string label) {
  recompute_ = on;
  recompute_label_ = label.empty() ? "module" : std::move(label);
}

Tensor Linear::forward(const Tensor& x) {
  GLOBE_CHECK(x.dim() >= 1 && x.shape().back() == weight.shape()[1], "[Linear] input ", describe(x),
              " does not end in in_features=", weight.shape()[1]);
  return linear(x, weight, bias);
}

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor GELU::forward(const Tensor& x) { return tanh_ ? gelu_tanh(x) : gelu(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor Dropout::forward(const Tensor& x) { return dropout(x, p_, is_training()); }

Embedding::Embedding(int64_t num_embeddings, int64_t dim) {
  weight = init::default_normal({num_embeddings, dim});
  register_parameter("weight", weight);
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight, indices); }

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool affine)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  if (affine) {
    weight = ones(normalized_shape_);
    bias = zeros(normalized_shape_);
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, normalized_shape_, weight, bias, eps_); }

RMSNorm::RMSNorm(int64_t dim, double eps) : weight(ones({dim})), eps_(eps) { register_parameter("weight", weight); }

Tensor RMSNorm::forward(const Tensor& x) { return rms_norm(x, weight, eps_); }

Tensor Flatten::forward(const Tensor& x) { return flatten(x, start_, end_); }

void Sequential::push_back(std::shared_ptr<UnaryModule> module) {
  GLOBE_CHECK(module != nullptr, "[Sequential] null module");
  register_module(std::to_string(layers_.size()), *module);
  layers_.push_back(std::move(module));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& layer : layers_) y = (*layer)(y);
  return y;
}

Tensor MSELoss::operator()(const Tensor& input, const Tensor& target) const {
  return mse_loss_with(input, target, reduction_);
}

Tensor CrossEntropyLoss::operator()(const Tensor& logits, const Tensor& target) const {
  return cross_entropy_with(logits, target, reduction_);
}

}  // namespace globe::nn
