#include "globe/optim/optimizer.h"

#include <cmath>

#include "globe/autograd/engine.h"
#include "globe/core/grad_mode.h"
#include "globe/dist/runtime.h"
#include "globe/global/global_tensor.h"
#include "globe/global/boxing.h"
#include "globe/global/grad_buckets.h"
#include "globe/global/zero_layout.h"
#include "globe/kernels/device_kernels.h"
#include "globe/ops/ops.h"

namespace globe::optim {

namespace {

// The layout ZeRO updates `p` in (stage >= 1; global/zero_layout.h); local parameters stay as they are.
NdSbp update_layout(const Tensor& p, int zero_stage) {
  if (!p.is_global()) return NdSbp();
  return zero_stage < 1 ? p.sbp() : zero_layout(p);
}

// The optimizer settles its parameters' gradients before it reads them: the backward passes still
// paused run, then the data-parallel reductions still pending are done, in buckets, not one per
// parameter; with ZeRO stage 2 a gradient still waiting for its reduction is reduced straight into
// the update layout (a reduce-scatter), and stays there.
void settle_grads(const std::vector<Tensor>& params, int zero_stage) {
  finish_backward();
  if (zero_stage < 2) return resolve_pending_grads(params);
  resolve_pending_grads(params, [zero_stage](const Tensor& p) { return update_layout(p, zero_stage); });
}

// Calls fn(p, g, i, target) with each parameter's local data and its gradient's (contiguous, one
// device) where it has a gradient; `target` is the tensor updated: the parameter, or with ZeRO its
// copy in the update layout, whose block is all-gathered back into the parameter afterwards.
template <class Fn>
void for_each_param(const std::vector<Tensor>& params, const char* op, int zero_stage, Fn&& fn) {
  // A parameter may still be on its way to another placement (a tied weight's move sends without
  // waiting): the in-place update waits for those sends.
  dist::finish_sends();
  settle_grads(params, zero_stage);
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    // Held by this optimizer alone: nothing else (no model) can see the update, which torch would
    // make silently. Module::to_global, distribute and to keep their parameters; an assignment does not.
    GLOBE_CHECK(p.impl_ptr().use_count() > 1, "[", op, "] step(): parameter ", i, " (", describe(p),
                ") is held by this optimizer alone, so updating it changes nothing: the model's tensor was "
                "replaced (by assignment) after the optimizer was made. Create the optimizer from "
                "model.parameters() after replacing them");
    Tensor g = p.grad();
    if (!g.defined()) continue;
    GLOBE_CHECK(g.shape() == p.shape(), "[", op, "] gradient ", describe(g), " does not match parameter ",
                describe(p));
    Tensor target = p;
    if (p.is_global()) {
      const NdSbp u = update_layout(p, zero_stage);
      if (u != p.sbp()) target = owned_copy(p, u);
      if (u != g.sbp()) g = box(g, p.placement(), u);  // B -> S: this rank's block, no communication
    }
    Tensor pl = target.to_local(), gl = contiguous(g.to_local());
    GLOBE_CHECK(pl.is_contiguous(), "[", op, "] parameter ", i, " is not contiguous");
    GLOBE_CHECK(is_floating(pl.dtype()) && gl.dtype() == pl.dtype(), "[", op, "] parameter ", i, " (", describe(p),
                ") and its gradient (", describe(g), ") must share one floating dtype");
    GLOBE_CHECK(gl.device() == pl.device(), "[", op, "] parameter ", i, " is on ", pl.device().str(),
                " but its gradient on ", gl.device().str());
    fn(pl, gl, i, target);
    if (!target.same(p)) kernels::device_copy(p.to_local(), shard_of(box(target, p.placement(), p.sbp())));
  }
}

// Optimizer state made for a parameter follows it when the parameter has moved since
// (Module::to_global, distribute) or changed dtype (Module::to): same values, its layout.
void follow(Tensor& state, const Tensor& p) {
  if (!state.defined()) return;
  const bool same_layout = state.is_global() == p.is_global() &&
                           (!p.is_global() || (state.placement() == p.placement() && state.sbp() == p.sbp()));
  if (same_layout && state.dtype() == p.dtype()) return;
  Tensor s = state.dtype() == p.dtype() ? state : to_dtype(state, p.dtype());
  if (p.is_global()) {
    s = s.is_global() ? s.to_global(p.placement(), p.sbp()) : from_full(s, p.placement(), p.sbp());
  } else if (s.is_global()) {
    s = s.to_global(Placement::all(s.placement().device()), replicated(1)).to_local();  // the whole value
  }
  state = contiguous(s).detach();  // the update writes the shard through a flat pointer
}

// A zero-filled state tensor in the layout parameter p is updated in (its own, or ZeRO's), so
// state_dict() saves it like any global tensor.
Tensor state_like(const Tensor& p, int zero_stage = 0) {
  const NdSbp u = update_layout(p, zero_stage);
  if (!p.is_global() || u == p.sbp()) return zeros_like(p);
  return zeros(p.shape(), p.placement(), u, p.dtype());
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  for (const Tensor& p : params_)
    GLOBE_CHECK(p.defined() && p.is_leaf(), "[optimizer] parameters must be leaf tensors");
}

void Optimizer::zero_grad() {
  for (const Tensor& p : params_) p.set_grad(Tensor());
}

void Optimizer::set_zero_stage(int stage) {
  GLOBE_CHECK(stage >= 0 && stage <= 2, "[optimizer] ZeRO stage ", stage, " is not supported: 0 (off), 1 (optimizer ",
              "state split over the data-parallel axes) or 2 (gradients too); parameters stay whole between steps");
  zero_stage_ = stage;  // existing state moves to the new layout at the next step (follow)
  reduce_into_update_layout(params_, stage >= 2);  // reduce-scattered as the backward completes them
}

namespace {
int64_t local_bytes(const Tensor& t) { return t.defined() ? t.to_local().numel() * int64_t(itemsize(t.dtype())) : 0; }
}  // namespace

int64_t Optimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& s : state_tensors()) bytes += local_bytes(s);
  return bytes;
}

Optimizer::Memory Optimizer::memory() const {
  Memory m{.state = state_bytes()};
  for (const Tensor& p : params_) {
    m.parameters += local_bytes(p);
    if (p.impl().grad) m.gradients += local_bytes(Tensor(p.impl().grad));  // as held: reading grad() would reduce it
  }
  return m;
}

SGD::SGD(std::vector<Tensor> params, SGDOptions o)
    : Optimizer(std::move(params)), options_(o), momentum_(params_.size()) {
  GLOBE_CHECK(o.lr >= 0 && o.momentum >= 0 && o.weight_decay >= 0, "[SGD] invalid options: lr=", o.lr,
              " momentum=", o.momentum, " weight_decay=", o.weight_decay);
  GLOBE_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "[SGD] nesterov needs momentum > 0 ",
              "and dampening = 0");
}

void SGD::step() {
  NoGradGuard no_grad;
  const SGDOptions o = options_;
  // Plain SGD keeps no state: ZeRO would only add the gathers.
  for_each_param(params_, "SGD", o.momentum == 0 ? 0 : zero_stage_,
                 [&](const Tensor& p, const Tensor& g, size_t i, const Tensor& target) {
    kernels::SgdStep step{o.lr, o.weight_decay, o.momentum, o.dampening, o.nesterov, false};
    Tensor buffer;
    if (o.momentum != 0) {
      follow(momentum_[i], target);
      step.first = !momentum_[i].defined();
      if (step.first) momentum_[i] = state_like(target);
      buffer = momentum_[i].to_local();
    }
    kernels::kernels_for(p).sgd_update(p, g, buffer, step);
  });
}

StateDict SGD::state_dict() const {
  StateDict sd;
  for (size_t i = 0; i < momentum_.size(); ++i)
    if (momentum_[i].defined()) sd.set("state." + std::to_string(i) + ".momentum_buffer", momentum_[i]);
  return sd;
}

void SGD::load_state_dict(const StateDict& state) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string key = "state." + std::to_string(i) + ".momentum_buffer";
    if (!state.contains(key)) {
      momentum_[i] = Tensor();
      continue;
    }
    momentum_[i] = state_like(params_[i], zero_stage_);
    copy_(momentum_[i], state.at(key));
  }
}

namespace {
std::vector<Tensor> all_params(const std::vector<ParamGroup>& groups) {
  std::vector<Tensor> all;
  for (const ParamGroup& g : groups) all.insert(all.end(), g.params.begin(), g.params.end());
  return all;
}
}  // namespace

std::vector<ParamGroup> decay_matrices_only(const std::vector<Tensor>& params, double weight_decay) {
  std::vector<ParamGroup> groups{{{}, weight_decay}, {{}, 0.0}};
  for (const Tensor& p : params) groups[p.dim() >= 2 ? 0 : 1].params.push_back(p);
  return groups;
}

Adam::Adam(std::vector<Tensor> params, AdamOptions o, bool decoupled)
    : Adam(std::vector<ParamGroup>{{std::move(params), o.weight_decay}}, o, decoupled) {}

Adam::Adam(const std::vector<ParamGroup>& groups, AdamOptions o, bool decoupled)
    : Optimizer(all_params(groups)),
      options_(o),
      decoupled_(decoupled),
      steps_(params_.size(), 0),
      exp_avg_(params_.size()),
      exp_avg_sq_(params_.size()) {
  for (const ParamGroup& g : groups) {
    GLOBE_CHECK(g.weight_decay >= 0, "[Adam] invalid weight_decay=", g.weight_decay);
    weight_decay_.insert(weight_decay_.end(), g.params.size(), g.weight_decay);
  }
  GLOBE_CHECK(o.lr >= 0 && o.eps >= 0 && o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1,
              "[Adam] invalid options: lr=", o.lr, " betas=(", o.beta1, ", ", o.beta2, ") eps=", o.eps);
}

void Adam::step() {
  NoGradGuard no_grad;
  const AdamOptions o = options_;
  for_each_param(params_, decoupled_ ? "AdamW" : "Adam", zero_stage_,
                 [&](const Tensor& p, const Tensor& g, size_t i, const Tensor& target) {
    follow(exp_avg_[i], target);
    follow(exp_avg_sq_[i], target);
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = state_like(target);
      exp_avg_sq_[i] = state_like(target);
    }
    // Steps count per parameter (as torch): one that first gets a gradient later starts at 1.
    const int64_t step = ++steps_[i];
    const double bc1 = 1 - std::pow(o.beta1, double(step));
    const double bc2_sqrt = std::sqrt(1 - std::pow(o.beta2, double(step)));
    const kernels::AdamStep k{o.beta1, o.beta2, o.lr / bc1, 1 - o.lr * weight_decay_[i], bc2_sqrt, o.eps,
                              weight_decay_[i], decoupled_};
    kernels::kernels_for(p).adam_update(p, g, exp_avg_[i].to_local(), exp_avg_sq_[i].to_local(), k);
  });
}

std::vector<Tensor> Adam::state_tensors() const {
  std::vector<Tensor> all = exp_avg_;
  all.insert(all.end(), exp_avg_sq_.begin(), exp_avg_sq_.end());
  return all;
}

StateDict Adam::state_dict() const {
  StateDict sd;
  for (size_t i = 0; i < exp_avg_.size(); ++i) {
    if (!exp_avg_[i].defined()) continue;
    sd.set("state." + std::to_string(i) + ".step", from_vector(std::vector<int64_t>{steps_[i]}, {}));
    sd.set("state." + std::to_string(i) + ".exp_avg", exp_avg_[i]);
    sd.set("state." + std::to_string(i) + ".exp_avg_sq", exp_avg_sq_[i]);
  }
  return sd;
}

void Adam::load_state_dict(const StateDict& state) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string base = "state." + std::to_string(i) + ".";
    if (!state.contains(base + "exp_avg")) {
      exp_avg_[i] = exp_avg_sq_[i] = Tensor();
      steps_[i] = 0;
      continue;
    }
    steps_[i] = state.at(base + "step").item<int64_t>();
    exp_avg_[i] = state_like(params_[i], zero_stage_);
    exp_avg_sq_[i] = state_like(params_[i], zero_stage_);
    copy_(exp_avg_[i], state.at(base + "exp_avg"));
    copy_(exp_avg_sq_[i], state.at(base + "exp_avg_sq"));
  }
}

}  // namespace globe::optim
