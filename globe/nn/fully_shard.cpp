#include "globe/nn/fully_shard.h"

#include <algorithm>
#include <utility>

#include "globe/autograd/checkpoint.h"
#include "globe/core/grad_mode.h"
#include "globe/core/hooks.h"
#include "globe/device/memory.h"
#include "globe/global/global_tensor.h"
#include "globe/global/zero_layout.h"

namespace globe::nn {

void fully_shard(Module& module, const FullyShardOptions& options) {
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
  module.set_reshard_after_forward(options.reshard_after_forward);
}

void set_prefetch(const std::vector<Module*>& modules, int depth) {
  GLOBE_CHECK(depth >= 0, "[fully_shard] prefetch depth ", depth, ": 0 (each module gathers when it runs) or more");
  for (size_t i = 0; i < modules.size(); ++i) {
    GLOBE_CHECK(modules[i] != nullptr, "[fully_shard] set_prefetch: module ", i, " is null");
    Module::Prefetch& p = modules[i]->prefetch();
    p.next.assign(modules.begin() + std::ptrdiff_t(std::min(modules.size(), i + 1)),
                  modules.begin() + std::ptrdiff_t(std::min(modules.size(), i + 1 + size_t(depth))));
    p.backward_depth = depth;
  }
}

}  // namespace globe::nn
