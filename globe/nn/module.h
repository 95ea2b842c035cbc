// nn::Module: parameters, buffers and submodules registered by name (state dicts depend on the
// names), as in libtorch's C++ frontend.
//
//   struct Net : nn::Module {
//     nn::Linear fc1{10, 20}, fc2{20, 5};
//     Net() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
//     Tensor forward(const Tensor& x) { return fc2(relu(fc1(x))); }
//   };
//
// Modules register pointers to their members, so a module is neither copyable nor movable.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "globe/core/tensor.h"
#include "globe/global/placement.h"
#include "globe/core/sbp.h"
#include "globe/nn/state_dict.h"

namespace globe::nn {

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Registration. `slot` must outlive the module (normally it is a member of it).
  Tensor& register_parameter(const std::string& name, Tensor& slot, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor& slot);
  Module& register_module(const std::string& name, Module& child);
  void register_modules(std::initializer_list<std::pair<std::string, std::reference_wrapper<Module>>> children);

  // Assignment by name, as an attribute assignment in PyTorch: a registered slot takes the new
  // tensor (so `set_parameter("weight", other.weight)` ties the two, exactly as assigning the member
  // `weight = other.weight` does in C++), an unregistered name is added with a slot the module
  // owns. set_module replaces the child of that name, or adds it, and keeps it alive. A name keeps
  // its kind: a parameter cannot become a buffer or a module. Python's modules
  // (python/globe/nn.py) keep their parameters, buffers and children here.
  void set_parameter(const std::string& name, const Tensor& value);
  void set_buffer(const std::string& name, const Tensor& value);
  void set_module(const std::string& name, std::shared_ptr<Module> child);
  // This module's own parameter or buffer of that name (not its children's); undefined if none.
  Tensor get(const std::string& name) const;
  // What `name` is here: "parameter", "buffer", "module" or "" (not registered).
  std::string kind_of(const std::string& name) const;

  // Recursive views, names dotted ("net1.weight"), in registration order.
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  std::vector<std::pair<std::string, Module*>> named_children() const { return children_; }
  // The name the module was first registered under in a parent ("" for a root): what its calls
  // are named in traces (base/trace.h), nested as the calls are ("h.0.attn").
  const std::string& name() const { return name_; }

  // Parameters and buffers, detached.
  StateDict state_dict() const;
  // Copies values into the existing parameters (optimizers keep pointing at them). Strict: every
  // key must match; missing, unexpected and mis-shaped keys are all listed in the error. Not
  // strict: missing and unexpected keys are allowed and returned (as PyTorch's load_state_dict
  // does), mis-shaped ones are still an error.
  struct LoadedKeys {
    std::vector<std::string> missing;     // in the model, not in `state`: left as they were
    std::vector<std::string> unexpected;  // in `state`, not in the model: ignored
  };
  LoadedKeys load_state_dict(const StateDict& state, bool strict = true);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();
  // Converts every parameter and buffer (e.g. to float64 for gradient checks), keeping requires_grad.
  void to(DType dtype);
  // Moves every parameter and buffer to `device` in place (torch's module.to(device)): a local one
  // is copied there; a global one keeps its ranks, mesh and SBP and takes the device's kind for
  // its placement (OneFlow's; its shard's device follows the rank, so the index is not used).
  // Gradients are dropped, as by to(dtype). A device this process cannot use is an error that
  // leaves the module as it was (module_global.cpp).
  void to(const Device& device);

  // Global layouts (module_global.cpp).
  // Every parameter and buffer becomes global as `local.to_global(placement, sbp)` would make it
  // (docs/design.md §3): with broadcast, rank 0's values win; with split, each rank's local tensor is its
  // shard. Already-global tensors are re-laid out (boxed).
  void to_global(const Placement& placement, const NdSbp& sbp);
  // Moves every parameter and buffer to `placement` keeping its SBP (local ones become broadcast),
  // as OneFlow's module.to_global(placement=...): how a pipeline puts a stage on its ranks.
  void to_global(const Placement& placement);
  // Distributes a full local module over `placement`: each tensor's local value is taken as the
  // whole logical value (rank 0's, broadcast to all), then laid out by `plan` (dotted name ->
  // SBP; names not listed get `default_sbp`). This is how tensor-parallel layers are built from
  // an ordinary initialisation, so the numbers do not depend on the number of ranks.
  void distribute(const Placement& placement, const std::vector<std::pair<std::string, NdSbp>>& plan,
                  const NdSbp& default_sbp);

  // How the module's forward sees its own parameters (nn/parameter_use.h). Fully sharded
  // parameters (nn/fully_shard.h): the layout each sharded parameter (by dotted name) is gathered
  // to while the module runs; empty when the module is not sharded. Mixed precision
  // (nn/mixed_precision.h): the dtype its floating parameters and inputs are cast to while it
  // runs; none (no cast) by default.
  const std::map<std::string, NdSbp>& gather_layouts() const { return gather_layouts_; }
  void set_gather_layouts(std::map<std::string, NdSbp> layouts) { gather_layouts_ = std::move(layouts); }
  std::optional<DType> compute_dtype() const { return compute_dtype_; }
  void set_compute_dtype(std::optional<DType> dtype) { compute_dtype_ = dtype; }
  // ZeRO-3's options (nn/fully_shard.h): whether the gathered copies are released when the forward
  // returns, and prefetch — the modules whose gathers start when this one is called, how many
  // module calls ahead the backward starts its gathers, and the gathers started for this module
  // ahead of its call (by parameter name; taken by its next call).
  struct Prefetch {
    std::vector<Module*> next;
    int backward_depth = 0;
    std::map<std::string, std::function<Tensor()>> started;
  };
  bool reshard_after_forward() const { return reshard_after_forward_; }
  void set_reshard_after_forward(bool on) { reshard_after_forward_ = on; }
  Prefetch& prefetch() { return prefetch_; }
  // Whether calling the module changes its parameters for the forward (gathers or casts them).
  bool transforms_parameters() const { return !gather_layouts_.empty() || compute_dtype_.has_value(); }

  // Calls fn(qualified_name, slot, is_parameter) for every parameter and buffer slot; lets layers
  // above nn (the global layer) replace tensors in place.
  void for_each_slot(const std::function<void(const std::string&, Tensor&, bool)>& fn,
                     const std::string& prefix = "");

 private:
  struct Slot {
    std::string name;
    Tensor* tensor;
  };
  void collect(const std::string& prefix, bool params, std::vector<std::pair<std::string, Tensor>>& out) const;

  void set_slot(std::vector<Slot>& slots, const char* kind, const std::string& name, const Tensor& value);

  std::vector<Slot> parameters_;
  std::vector<Slot> buffers_;
  std::vector<std::pair<std::string, Module*>> children_;
  std::deque<Tensor> owned_slots_;                   // slots of names added by set_parameter/set_buffer
  std::map<std::string, std::shared_ptr<Module>> owned_children_;  // children set_module keeps alive, by name
  bool training_ = true;
  std::string name_;
  std::map<std::string, NdSbp> gather_layouts_;
  std::optional<DType> compute_dtype_;
  bool reshard_after_forward_ = true;
  Prefetch prefetch_;
};

}  // namespace globe::nn
