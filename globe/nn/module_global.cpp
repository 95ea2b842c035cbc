// Module::to_global, Module::distribute and Module::to(device): the nn layer's bridge to global
// tensors and devices.
#include <algorithm>

#include "globe/core/grad_mode.h"
#include "globe/global/global_tensor.h"
#include "globe/nn/module.h"
#include "globe/ops/ops.h"

namespace globe::nn {

namespace {

// The slot's tensor itself takes the converted value and layout (Tensor::rebind): an optimizer
// made before keeps pointing at the parameter, and tied slots stay tied.
void replace_leaf(Tensor& slot, const Tensor& converted) { slot.rebind(converted); }

}  // namespace

void Module::to_global(const Placement& placement, const NdSbp& sbp) {
  NoGradGuard no_grad;
  for_each_slot([&](const std::string&, Tensor& slot, bool) { replace_leaf(slot, slot.to_global(placement, sbp)); });
}

void Module::to_global(const Placement& placement) {
  NoGradGuard no_grad;
  for_each_slot([&](const std::string& name, Tensor& slot, bool) {
    if (!slot.is_global()) return replace_leaf(slot, slot.to_global(placement, replicated(placement.mesh_ndim())));
    GLOBE_CHECK(slot.placement().mesh_ndim() == placement.mesh_ndim(), "[to_global] '", name, "' is laid out ",
                slot.sbp().to_string(), " on ", slot.placement().to_string(), "; moving it to ", placement.to_string(),
                " needs an SBP for that mesh: to_global(placement, sbp)");
    replace_leaf(slot, slot.to_global(placement));
  });
}

void Module::to(const Device& device) {
  // Checked before anything moves: a device this process cannot use leaves the module as it was
  // (a global slot's shard goes to local_rank % the devices of that kind, which exist then).
  check_device_usable(device, "[to]");
  const std::string kind = device_type_name(device.type);
  auto moved = [&](const Placement& p) { return Placement(kind, p.ranks(), p.mesh_shape()); };
  NoGradGuard no_grad;
  for_each_slot([&](const std::string&, Tensor& slot, bool) {
    if (!slot.is_global()) {
      if (slot.device() != device) replace_leaf(slot, globe::to(slot, device));
    } else if (slot.placement().device_type() != device.type) {
      replace_leaf(slot, slot.to_global(moved(slot.placement()), slot.sbp()));
    }
  });
}

void Module::distribute(const Placement& placement, const std::vector<std::pair<std::string, NdSbp>>& plan,
                        const NdSbp& default_sbp) {
  // Check the plan before touching anything: a bad plan changes nothing.
  std::vector<std::string> names;
  for_each_slot([&](const std::string& name, Tensor&, bool) { names.push_back(name); });
  for (const auto& [key, s] : plan)
    GLOBE_CHECK(std::find(names.begin(), names.end(), key) != names.end(), "[distribute] the plan names '", key,
                "' but the module has no such parameter or buffer");
  NoGradGuard no_grad;
  const NdSbp whole = replicated(placement.mesh_ndim());
  for_each_slot([&](const std::string& name, Tensor& slot, bool) {
    NdSbp target = default_sbp;
    for (const auto& [key, s] : plan)
      if (key == name) target = s;
    // The whole value (rank 0's when local), then its layout.
    replace_leaf(slot, slot.to_global(placement, whole).to_global(placement, target));
  });
}

}  // namespace globe::nn
