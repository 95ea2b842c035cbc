#include "globe/nn/parameter_use.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "globe/autograd/checkpoint.h"
#include "globe/core/grad_mode.h"
#include "globe/device/memory.h"
#include "globe/global/boxing.h"
#include "globe/global/global_tensor.h"
#include "globe/nn/layers.h"
#include "globe/nn/remade_storage.h"
#include "globe/ops/ops.h"

namespace globe::nn {

namespace {

// `t` cast to `dtype` when one is given and `t` is floating of another dtype; `t` itself otherwise.
Tensor cast_floating(const Tensor& t, std::optional<DType> dtype) {
  return dtype && t.defined() && is_floating(t.dtype()) && t.dtype() != *dtype ? to_dtype(t, *dtype) : t;
}

// A parameter's gather to `layout` started: all-gathered going forward; coming back, the
// gradient is boxed to the shard's layout, a reduce-scatter over the data-parallel axes.
std::function<Tensor()> start_gather(const Tensor& stored, const NdSbp& layout) {
  return start_to_global(stored, layout, stored.sbp());
}

// The used copy's storage on this rank, when it is a buffer of its own (not the stored one's).
std::shared_ptr<Storage> own_storage(const Tensor& used, const Tensor& stored) {
  const std::shared_ptr<Storage>& st = detail::storage_on_this_rank(used);
  if (!st || st == detail::storage_on_this_rank(stored)) return nullptr;
  const Tensor& g = used.is_global() ? shard_of(used) : used;
  return g.offset() == 0 && g.is_contiguous() && st->nbytes == size_t(g.numel()) * itemsize(g.dtype()) ? st : nullptr;
}

// After the forward, a gathered copy's bytes are released; a backward node that reads them makes
// them again into the same storage (nn/remade_storage.h): gathered, and cast. The gather is
// started first and finished when the backward needs the bytes (prefetch). The stored parameter
// is held weakly: the graph that reads the copy holds it (the gather's node), and nothing of a
// graph that is gone may keep it.
void release_until_backward(const std::shared_ptr<Storage>& st, const Tensor& stored, const NdSbp& layout,
                            std::optional<DType> dtype, uint64_t group, int ahead) {
  detail::Remake remake = [held = std::weak_ptr<TensorImpl>(stored.impl_ptr()), layout,
                           dtype](Storage& into) -> std::function<void()> {
    const Tensor stored(held.lock());
    GLOBE_CHECK(stored.defined(), "[fully_shard] the parameter whose gathered copy the backward needs is gone");
    return [gathered = start_box(stored, layout), dtype, into = &into]() mutable {
      NoGradGuard no_grad;
      Tensor again = cast_floating(gathered(), dtype);
      gathered = nullptr;  // its buffer is `again`'s alone now (or freed, when cast)
      const Tensor& local = shard_of(again);
      GLOBE_CHECK(local.is_contiguous() && size_t(local.numel()) * itemsize(local.dtype()) == into->nbytes,
                  "[fully_shard] the parameter gathered again for the backward has another layout (", describe(again), ")");
      const std::shared_ptr<Storage>& landed = local.impl().storage;
      // Gathered straight into a buffer of the right size: it becomes the storage, no copy.
      if (local.offset() == 0 && landed.use_count() == 1 && landed->nbytes == into->nbytes && landed->device == into->device &&
          !landed->owner) {
        detail::take_bytes(*into, *landed);
        return;
      }
      into->data = globe::detail::allocate(into->device, into->nbytes, /*zero=*/false);
      globe::detail::copy_bytes(into->device, into->data, local.device(),
                                static_cast<const char*>(landed->data) + local.offset() * itemsize(local.dtype()),
                                into->nbytes);
    };
  };
  detail::release_until_backward(st, std::move(remake), group, ahead);
}

// Starts `m`'s gathers ahead of its call (in slot order, as its call would), unless started.
void start_gathers(Module& m) {
  auto& started = m.prefetch().started;
  if (!started.empty()) return;
  const std::map<std::string, NdSbp>& layouts = m.gather_layouts();
  m.for_each_slot([&](const std::string& name, Tensor& slot, bool is_parameter) {
    if (!is_parameter) return;
    if (auto it = layouts.find(name); it != layouts.end()) started[name] = start_gather(slot, it->second);
  });
}

// Lets gathers started ahead land and drops them (a forward that failed on its way: they were
// meant for modules it never reached). Errors of theirs give way to the one that stopped it.
void drop_started(Module& m) {
  for (auto& [name, gather] : m.prefetch().started) try {
      gather();
    } catch (...) {
    }
  m.prefetch().started.clear();
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
  // A recomputation's rerun (in the backward) gathers for itself and prefetches nothing: the
  // gathers started ahead are the forward's.
  const bool rerun = recomputing();
  std::map<std::string, std::function<Tensor()>> started;
  if (!rerun) started = std::exchange(module.prefetch().started, {});
  struct Use {
    Tensor* slot;
    const NdSbp* layout;
    std::optional<DType> dtype;
    std::function<Tensor()> gathered;
  };
  std::vector<Use> uses;
  std::vector<std::string> own_region;
  if (dtype) recomputed_prefixes(module, "", own_region);
  // This module's gathers first (started ahead by the module before it, or now), then the next
  // modules' (prefetch): every rank issues them in this order.
  module.for_each_slot([&](const std::string& name, Tensor& slot, bool is_parameter) {
    if (!is_parameter) return;
    auto it = layouts.find(name);
    const NdSbp* layout = it == layouts.end() ? nullptr : &it->second;
    const bool cast_later = std::any_of(own_region.begin(), own_region.end(),
                                        [&](const std::string& p) { return name.rfind(p, 0) == 0; });
    Use use{&slot, layout, cast_later ? std::nullopt : dtype, {}};
    if (layout != nullptr) {
      auto s = started.find(name);
      use.gathered = s != started.end() ? std::move(s->second) : start_gather(slot, *layout);
    }
    uses.push_back(std::move(use));
  });
  if (!rerun)
    for (Module* next : module.prefetch().next) start_gathers(*next);
  struct Gathered {
    Tensor used, stored;
    NdSbp layout;
    std::optional<DType> dtype;
  };
  std::vector<Gathered> gathered;
  Tensor out;
  try {
    for (Use& u : uses) {
      const Tensor used = cast_floating(u.gathered ? u.gathered() : *u.slot, u.dtype);
      if (used.same(*u.slot)) continue;
      restore.slots.emplace_back(u.slot, *u.slot);
      if (u.layout != nullptr) gathered.push_back({used, *u.slot, *u.layout, u.dtype});
      *u.slot = used;
    }
    out = run();
  } catch (...) {
    if (!rerun)
      for (Module* next : module.prefetch().next) drop_started(*next);
    throw;
  }
  // PyTorch FSDP's reshard_after_forward: the graph keeps the gathered copies for the backward;
  // their bytes are released now and gathered again there. Not while a recomputation runs (its
  // backward follows at once), nor without a graph (the copies die with this call), nor for a
  // copy the output shares, nor when the module keeps them (reshard_after_forward false).
  // Parameters only cast, not gathered, keep their cast copy.
  if (grad_enabled() && !rerun && module.reshard_after_forward()) {
    static uint64_t calls = 0;  // one remake group per call: the backward's unit of prefetch
    const uint64_t group = ++calls;
    const std::shared_ptr<Storage> out_storage = out.defined() ? detail::storage_on_this_rank(out) : nullptr;
    for (const Gathered& g : gathered) {
      const std::shared_ptr<Storage> st = own_storage(g.used, g.stored);
      if (st != nullptr && st != out_storage && g.used.requires_grad())
        release_until_backward(st, g.stored, g.layout, g.dtype, group, module.prefetch().backward_depth);
    }
  }
  return out;
}

}  // namespace globe::nn
