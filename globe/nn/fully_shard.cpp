#include "globe/nn/fully_shard.h"

#include <utility>

#include "globe/core/grad_mode.h"
#include "globe/global/global_tensor.h"
#include "globe/global/zero_layout.h"

namespace globe::nn {

void fully_shard(Module& module) {
  std::map<std::string, NdSbp> gather;
  NoGradGuard no_grad;
  module.for_each_slot([&](const std::string& name, Tensor& slot, bool is_parameter) {
    if (!is_parameter) return;
    GLOBE_CHECK(slot.is_global(), "[fully_shard] parameter ", name, " (", describe(slot), ") is local: lay the module ",
                "out on a placement first (to_global or distribute), then shard it");
    const NdSbp shard = zero_layout(slot);
    if (shard == slot.sbp()) return;  // no broadcast axis, or too few rows for one
    gather[name] = slot.sbp();
    slot.rebind(owned_copy(slot, shard));  // the same parameter, now holding its shard
  });
  module.set_gather_layouts(std::move(gather));
}

Tensor with_gathered(Module& module, const std::function<Tensor()>& run) {
  // The shards, put back whatever forward does (an exception included).
  struct Restore {
    std::vector<std::pair<Tensor*, Tensor>> slots;
    ~Restore() {
      for (auto& [slot, shard] : slots) *slot = std::move(shard);
    }
  } restore;
  const std::map<std::string, NdSbp>& layouts = module.gather_layouts();
  module.for_each_slot([&](const std::string& name, Tensor& slot, bool is_parameter) {
    auto it = layouts.find(name);
    if (!is_parameter || it == layouts.end()) return;
    restore.slots.emplace_back(&slot, slot);
    // All-gathered going forward; coming back, the gradient is boxed to the shard's layout: a
    // reduce-scatter over the data-parallel axes.
    slot = slot.to_global(slot.placement(), it->second, slot.sbp());
  });
  return run();
}

}  // namespace globe::nn
