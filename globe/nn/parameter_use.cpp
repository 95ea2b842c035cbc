#include "globe/nn/parameter_use.h"

#include <algorithm>
#include <utility>

#include "globe/autograd/checkpoint.h"
#include "globe/core/grad_mode.h"
#include "globe/core/hooks.h"
#include "globe/device/memory.h"
#include "globe/global/global_tensor.h"
#include "globe/nn/layers.h"
#include "globe/ops/ops.h"

namespace globe::nn {

namespace {

// `t` cast to `dtype` when one is given and `t` is floating of another dtype; `t` itself otherwise.
Tensor cast_floating(const Tensor& t, std::optional<DType> dtype) {
  return dtype && t.defined() && is_floating(t.dtype()) && t.dtype() != *dtype ? to_dtype(t, *dtype) : t;
}

// A parameter as the forward uses it: gathered to `layout` when it has one, then cast to `dtype`
// when floating and of another dtype.
Tensor in_use(const Tensor& stored, const NdSbp* layout, std::optional<DType> dtype) {
  Tensor t = stored;
  // All-gathered going forward; coming back, the gradient is boxed to the shard's layout: a
  // reduce-scatter over the data-parallel axes.
  if (layout != nullptr) t = t.to_global(t.placement(), *layout, t.sbp());
  return cast_floating(t, dtype);
}

// The used copy's storage on this rank, when it is a buffer of its own (not the stored one's).
Storage* own_storage(const Tensor& used, const Tensor& stored) {
  const Tensor& g = used.is_global() ? shard_of(used) : used;
  if (!g.defined() || !g.impl().storage) return nullptr;
  Storage* st = g.impl().storage.get();
  const Tensor& s = stored.is_global() ? shard_of(stored) : stored;
  if (s.defined() && s.impl().storage.get() == st) return nullptr;
  return g.offset() == 0 && g.is_contiguous() && st->nbytes == size_t(g.numel()) * itemsize(g.dtype()) ? st : nullptr;
}

// After the forward, a gathered copy's bytes are released; a backward node that reads them makes
// them again into the same storage (the autograd engine, Storage::make_again): gathered, and cast.
void release_until_backward(Storage* st, const Tensor& stored, const NdSbp& layout, std::optional<DType> dtype) {
  st->remake = [stored, layout, dtype](Storage& into) {
    NoGradGuard no_grad;
    const Tensor again = in_use(stored, &layout, dtype);
    const Tensor& local = shard_of(again);
    GLOBE_CHECK(local.is_contiguous() && size_t(local.numel()) * itemsize(local.dtype()) == into.nbytes,
                "[fully_shard] the parameter gathered again for the backward has another layout (", describe(again), ")");
    globe::detail::copy_bytes(into.device, into.data, local.device(),
                              static_cast<const char*>(local.impl().storage->data) + local.offset() * itemsize(local.dtype()),
                              into.nbytes);
  };
  st->release();
}

// Dotted-name prefixes ("0.", "mlp.c_fc.") of the descendants of `m` that are recomputed: each
// casts its own parameters inside its recomputed region, so that the region's rerun in the
// backward, when no enclosing call has cast them, records the same ops.
void recomputed_prefixes(const Module& m, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [name, child] : m.named_children()) {
    const auto* u = dynamic_cast<const UnaryModule*>(child);
    if (u != nullptr && u->recompute()) out.push_back(prefix + name + ".");
    else recomputed_prefixes(*child, prefix + name + ".", out);
  }
}

}  // namespace

Tensor cast_input(const Module& module, const Tensor& x) {
  return cast_floating(x, module.compute_dtype());
}

Tensor with_parameters_in_use(Module& module, const std::function<Tensor()>& run) {
  // The stored parameters, put back whatever forward does (an exception included).
  struct Restore {
    std::vector<std::pair<Tensor*, Tensor>> slots;
    ~Restore() {
      for (auto& [slot, stored] : slots) *slot = std::move(stored);
    }
  } restore;
  const std::map<std::string, NdSbp>& layouts = module.gather_layouts();
  const std::optional<DType> dtype = module.compute_dtype();
  struct Gathered {
    Tensor used, stored;
    NdSbp layout;
  };
  std::vector<Gathered> gathered;
  std::vector<std::string> own_region;
  if (dtype) recomputed_prefixes(module, "", own_region);
  module.for_each_slot([&](const std::string& name, Tensor& slot, bool is_parameter) {
    if (!is_parameter) return;
    auto it = layouts.find(name);
    const NdSbp* layout = it == layouts.end() ? nullptr : &it->second;
    const bool cast_later = std::any_of(own_region.begin(), own_region.end(),
                                        [&](const std::string& p) { return name.rfind(p, 0) == 0; });
    const Tensor used = in_use(slot, layout, cast_later ? std::nullopt : dtype);
    if (used.same(slot)) return;
    restore.slots.emplace_back(&slot, slot);
    if (layout != nullptr) gathered.push_back({used, slot, *layout});
    slot = used;
  });
  Tensor out = run();
  // PyTorch FSDP's reshard_after_forward: the graph keeps the gathered copies for the backward;
  // their bytes are released now and gathered again there. Not while a recomputation runs (its
  // backward follows at once), nor without a graph (the copies die with this call), nor for a
  // copy the output shares. Parameters only cast, not gathered, keep their cast copy.
  if (grad_enabled() && !recomputing()) {
    const Storage* out_storage = out.defined() ? globe::detail::core_hooks.storage_of(out) : nullptr;
    for (const Gathered& g : gathered) {
      Storage* st = own_storage(g.used, g.stored);
      if (st != nullptr && st != out_storage && g.used.requires_grad())
        release_until_backward(st, g.stored, g.layout, dtype);
    }
  }
  return out;
}

}  // namespace globe::nn
