#include "globe/nn/module.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "globe/core/grad_mode.h"
#include "globe/ops/ops.h"

namespace globe::nn {

Tensor& Module::register_parameter(const std::string& name, Tensor& slot, bool requires_grad) {
  GLOBE_CHECK(slot.defined(), "[register_parameter] '", name, "' is undefined");
  if (requires_grad && !slot.requires_grad()) slot.set_requires_grad(true);
  parameters_.push_back({name, &slot});
  return slot;
}

Tensor& Module::register_buffer(const std::string& name, Tensor& slot) {
  buffers_.push_back({name, &slot});
  return slot;
}

Module& Module::register_module(const std::string& name, Module& child) {
  GLOBE_CHECK(&child != this, "[register_module] a module cannot contain itself");
  children_.emplace_back(name, &child);
  if (child.name_.empty()) child.name_ = name;
  return child;
}

void Module::register_modules(
    std::initializer_list<std::pair<std::string, std::reference_wrapper<Module>>> children) {
  for (const auto& [name, child] : children) register_module(name, child.get());
}

std::string Module::kind_of(const std::string& name) const {
  auto has = [&](const std::vector<Slot>& v) {
    return std::any_of(v.begin(), v.end(), [&](const Slot& s) { return s.name == name; });
  };
  if (has(parameters_)) return "parameter";
  if (has(buffers_)) return "buffer";
  for (const auto& [n, child] : children_)
    if (n == name) return "module";
  return "";
}

void Module::set_slot(std::vector<Slot>& slots, const char* kind, const std::string& name, const Tensor& value) {
  const std::string now = kind_of(name);
  GLOBE_CHECK(now.empty() || now == kind, "[set_", kind, "] '", name, "' is a ", now, " of this module, not a ", kind);
  GLOBE_CHECK(value.defined(), "[set_", kind, "] '", name, "' is undefined");
  for (Slot& s : slots)
    if (s.name == name) {
      *s.tensor = value;  // the slot now holds this very tensor: its users see it
      return;
    }
  owned_slots_.push_back(value);
  slots.push_back({name, &owned_slots_.back()});
}

void Module::set_parameter(const std::string& name, const Tensor& value) { set_slot(parameters_, "parameter", name, value); }

void Module::set_buffer(const std::string& name, const Tensor& value) { set_slot(buffers_, "buffer", name, value); }

void Module::set_module(const std::string& name, std::shared_ptr<Module> child) {
  GLOBE_CHECK(child != nullptr, "[set_module] '", name, "' is null");
  GLOBE_CHECK(child.get() != this, "[set_module] a module cannot contain itself");
  const std::string now = kind_of(name);
  GLOBE_CHECK(now.empty() || now == "module", "[set_module] '", name, "' is a ", now, " of this module, not a module");
  Module* raw = child.get();
  if (raw->name_.empty()) raw->name_ = name;
  owned_children_[name] = std::move(child);  // a replaced child is no longer kept alive here
  for (auto& [n, c] : children_)
    if (n == name) {
      c = raw;
      return;
    }
  children_.emplace_back(name, raw);
}

Tensor Module::get(const std::string& name) const {
  for (const auto* slots : {&parameters_, &buffers_})
    for (const Slot& s : *slots)
      if (s.name == name) return *s.tensor;
  return Tensor();
}

void Module::collect(const std::string& prefix, bool params,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const Slot& s : params ? parameters_ : buffers_) out.emplace_back(prefix + s.name, *s.tensor);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", params, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", true, out);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", false, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) {
    bool seen = std::any_of(out.begin(), out.end(), [&](const Tensor& o) { return o.same(t); });
    if (!seen) out.push_back(t);  // a shared parameter appears once
  }
  return out;
}

StateDict Module::state_dict() const {
  StateDict sd;
  for (auto& [name, t] : named_parameters()) sd.set(name, t.detach());
  for (auto& [name, t] : named_buffers()) sd.set(name, t.detach());
  return sd;
}

void Module::for_each_slot(const std::function<void(const std::string&, Tensor&, bool)>& fn,
                           const std::string& prefix) {
  for (Slot& s : parameters_) fn(prefix + s.name, *s.tensor, true);
  for (Slot& s : buffers_) fn(prefix + s.name, *s.tensor, false);
  for (auto& [name, child] : children_) child->for_each_slot(fn, prefix + name + ".");
}

Module::LoadedKeys Module::load_state_dict(const StateDict& state, bool strict) {
  std::vector<std::string> missing, mismatched;
  std::set<std::string> known;
  std::vector<std::pair<Tensor, Tensor>> assignments;
  for_each_slot([&](const std::string& name, Tensor& slot, bool) {
    known.insert(name);
    if (!state.contains(name)) {
      missing.push_back(name);
      return;
    }
    const Tensor& v = state.at(name);
    if (v.shape() != slot.shape()) {
      mismatched.push_back(name + ": checkpoint " + shape_str(v.shape()) + " vs model " +
                           shape_str(slot.shape()));
      return;
    }
    assignments.emplace_back(slot, v);
  });
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : state)
    if (!known.count(name)) unexpected.push_back(name);
  auto list = [](const std::vector<std::string>& v) {
    std::ostringstream os;
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
    return os.str();
  };
  const bool bad = !mismatched.empty() || (strict && (!missing.empty() || !unexpected.empty()));
  GLOBE_CHECK(!bad, "[load_state_dict] state dict does not match the model:",
              missing.empty() ? "" : " missing keys: " + list(missing) + ";",
              unexpected.empty() ? "" : " unexpected keys: " + list(unexpected) + ";",
              mismatched.empty() ? "" : " shape mismatch: " + list(mismatched) + ";");
  // Validated first, assigned after: a failed load changes nothing.
  NoGradGuard no_grad;
  for (auto& [slot, v] : assignments) copy_(slot, v);
  return {missing, unexpected};
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.set_grad(Tensor());
}

void Module::to(DType dtype) {
  // In place (Tensor::rebind): optimizers keep their parameters, and a tensor held by several
  // slots (tied weights) is converted once, at the first, so the slots stay tied.
  // Checked before anything changes: a failed to() leaves the module as it was.
  for_each_slot([&](const std::string& name, Tensor& slot, bool) {
    GLOBE_CHECK(is_floating(dtype) || !slot.requires_grad() || !is_floating(slot.dtype()), "[to] '", name,
                "' requires grad and cannot become ", dtype_name(dtype));
  });
  NoGradGuard no_grad;
  for_each_slot([&](const std::string&, Tensor& slot, bool) {
    if (slot.dtype() == dtype || !is_floating(slot.dtype())) return;
    slot.rebind(to_dtype(slot, dtype));
  });
}

}  // namespace globe::nn
