#include "checkpoint.h"

#include <algorithm>

namespace gpt {

using globe::Tensor;

namespace {

// nanoGPT's c_attn [3E, E] / [3E] <-> ours [3, E, E] / [3, E]: the same numbers, reshaped. Other
// shapes are left alone (load_state_dict then names them as mismatched).
Tensor qkv_to_ours(const Tensor& t) {
  const int64_t n = t.shape()[0];
  if (t.dim() == 2 && n == 3 * t.shape()[1]) return globe::reshape(t, {3, n / 3, t.shape()[1]});
  if (t.dim() == 1 && n % 3 == 0) return globe::reshape(t, {3, n / 3});
  return t;
}

Tensor qkv_to_nanogpt(const Tensor& t) {
  return t.dim() == 3 ? globe::reshape(t, {3 * t.shape()[1], t.shape()[2]}) : globe::reshape(t, {3 * t.shape()[1]});
}

bool is_qkv(const std::string& key) { return key.find("attn.c_attn.") != std::string::npos; }

const std::string kOptim = "optimizer.";

}  // namespace

void load_nanogpt(GPT& model, const std::string& path) {
  globe::StateDict file = globe::load(path), ours;
  for (const auto& [key, value] : file) ours.set(key, is_qkv(key) ? qkv_to_ours(value) : value);
  model.load_state_dict(ours);
}

void save_nanogpt(GPT& model, const std::string& path) {
  globe::StateDict out;
  for (const auto& [key, value] : model.state_dict()) out.set(key, is_qkv(key) ? qkv_to_nanogpt(value) : value);
  globe::save(out, path);
}

NamedAdamW make_adamw(GPT& model, double lr, double weight_decay) {
  const auto named = model.named_parameters();
  std::vector<Tensor> params;
  for (const auto& [name, p] : named) params.push_back(p);
  const std::vector<globe::optim::ParamGroup> groups = globe::optim::decay_matrices_only(params, weight_decay);
  // The optimizer indexes parameters group after group: name them in that order.
  NamedAdamW a;
  for (const auto& g : groups)
    for (const Tensor& p : g.params)
      for (const auto& [name, q] : named)
        if (q.same(p)) a.names.push_back(name);
  a.optimizer = std::make_unique<globe::optim::Adam>(groups, globe::optim::AdamOptions{.lr = lr, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8},
                                                     /*decoupled=*/true);
  return a;
}

void save_training(const std::string& dir, GPT& model, const NamedAdamW& adamw, int64_t step) {
  globe::StateDict sd = model.state_dict();
  // The optimizer's "state.<i>.<what>" under the parameter's name: another layout (or another
  // parameter order) loads it by name.
  for (const auto& [key, value] : adamw.optimizer->state_dict()) {
    const size_t dot = key.find('.', 6);
    const size_t i = std::stoul(key.substr(6, dot - 6));
    sd.set(kOptim + adamw.names[i] + key.substr(dot), value);
  }
  globe::CheckpointManager(dir, {.keep = 2}).save(step, sd);  // DIR/step-<step>, the last two kept
}

int64_t load_training(const std::string& dir, GPT& model, NamedAdamW& adamw) {
  globe::StateDict like = model.state_dict();
  const auto params = adamw.optimizer->params();
  for (size_t i = 0; i < params.size(); ++i) {
    like.set(kOptim + adamw.names[i] + ".step", globe::from_vector(std::vector<int64_t>{0}, {}));
    like.set(kOptim + adamw.names[i] + ".exp_avg", params[i]);
    like.set(kOptim + adamw.names[i] + ".exp_avg_sq", params[i]);
  }
  const auto got = globe::CheckpointManager(dir).load_latest(like);  // the newest complete one
  GLOBE_CHECK(got.has_value(), "[gpt] no complete checkpoint in '", dir, "' to resume from");
  globe::StateDict weights, optim;
  for (const auto& [key, value] : got->state) {
    if (key.rfind(kOptim, 0) == 0) {
      const std::string rest = key.substr(kOptim.size());
      const size_t dot = rest.rfind('.');
      const auto it = std::find(adamw.names.begin(), adamw.names.end(), rest.substr(0, dot));
      optim.set("state." + std::to_string(it - adamw.names.begin()) + rest.substr(dot), value);
    } else {
      weights.set(key, value);
    }
  }
  model.load_state_dict(weights);
  adamw.optimizer->load_state_dict(optim);
  return got->step;
}

}  // namespace gpt
