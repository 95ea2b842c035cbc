#include "globe/nn/fully_shard.h"

#include <utility>

#include "globe/autograd/checkpoint.h"
#include "globe/core/grad_mode.h"
#include "globe/core/hooks.h"
#include "globe/device/memory.h"
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

namespace {

// The gathered copy's storage on this rank, when it is a buffer of its own (not the shard's).
Storage* own_storage(const Tensor& gathered, const Tensor& shard) {
  const Tensor& g = shard_of(gathered);
  if (!g.defined() || !g.impl().storage) return nullptr;
  Storage* st = g.impl().storage.get();
  const Tensor& s = shard_of(shard);
  if (s.defined() && s.impl().storage.get() == st) return nullptr;
  return g.offset() == 0 && g.is_contiguous() && st->nbytes == size_t(g.numel()) * itemsize(g.dtype()) ? st : nullptr;
}

// After the forward, the gathered copy's bytes are released; a backward node that reads them
// gathers them again into the same storage (the autograd engine, Storage::make_again).
void release_until_backward(Storage* st, const Tensor& shard, const NdSbp& layout) {
  st->remake = [shard, layout](Storage& into) {
    NoGradGuard no_grad;
    const Tensor again = shard.to_global(shard.placement(), layout);
    const Tensor& local = shard_of(again);
    GLOBE_CHECK(local.is_contiguous() && size_t(local.numel()) * itemsize(local.dtype()) == into.nbytes,
                "[fully_shard] the parameter gathered again for the backward has another layout (", describe(again), ")");
    globe::detail::copy_bytes(into.device, into.data, local.device(),
                              static_cast<const char*>(local.impl().storage->data) + local.offset() * itemsize(local.dtype()),
                              into.nbytes);
  };
  st->release();
}

}  // namespace

Tensor with_gathered(Module& module, const std::function<Tensor()>& run) {
  // The shards, put back whatever forward does (an exception included).
  struct Restore {
    std::vector<std::pair<Tensor*, Tensor>> slots;
    ~Restore() {
      for (auto& [slot, shard] : slots) *slot = std::move(shard);
    }
  } restore;
  const std::map<std::string, NdSbp>& layouts = module.gather_layouts();
  std::vector<std::pair<Tensor, NdSbp>> gathered;
  module.for_each_slot([&](const std::string& name, Tensor& slot, bool is_parameter) {
    auto it = layouts.find(name);
    if (!is_parameter || it == layouts.end()) return;
    restore.slots.emplace_back(&slot, slot);
    // All-gathered going forward; coming back, the gradient is boxed to the shard's layout: a
    // reduce-scatter over the data-parallel axes.
    slot = slot.to_global(slot.placement(), it->second, slot.sbp());
    gathered.emplace_back(slot, it->second);
  });
  Tensor out = run();
  // PyTorch FSDP's reshard_after_forward: the graph keeps the gathered copies for the backward;
  // their bytes are released now and gathered again there. Not while a recomputation runs (its
  // backward follows at once), nor without a graph (the copies die with this call), nor for a
  // copy the output shares.
  if (grad_enabled() && !recomputing()) {
    const Storage* out_storage = out.defined() ? globe::detail::core_hooks.storage_of(out) : nullptr;
    for (size_t i = 0; i < gathered.size(); ++i) {
      Storage* st = own_storage(gathered[i].first, restore.slots[i].second);
      if (st != nullptr && st != out_storage && gathered[i].first.requires_grad())
        release_until_backward(st, restore.slots[i].second, gathered[i].second);
    }
  }
  return out;
}

}  // namespace globe::nn
