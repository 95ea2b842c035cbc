#include "globe/global/grad_buckets.h"

#include <map>
#include <tuple>

#include "globe/autograd/engine.h"
#include "globe/core/grad_mode.h"
#include "globe/dist/runtime.h"
#include "globe/global/global_tensor.h"
#include "globe/global/op_history.h"
#include "globe/kernels/elementwise.h"

namespace globe {

namespace {

struct Waiting {
  Tensor param, grad, local;  // local: the gradient's shard on this rank
};

}  // namespace

void settle_grads(const std::vector<Tensor>& params) {
  finish_backward();
  NoGradGuard no_grad;
  const int me = dist::world_rank();
  // Buckets in first-seen order (every rank sees the same parameters in the same order).
  using Key = std::tuple<size_t, DType, std::string, std::string>;  // placement hash, dtype, from, to
  std::map<Key, size_t> index;
  std::vector<std::vector<Waiting>> buckets;
  for (const Tensor& p : params) {
    TensorImpl& impl = p.impl();
    if (!impl.grad_unsettled || !impl.grad) continue;
    const Tensor g(impl.grad);
    if (!g.is_global() || !p.is_global() || g.placement() != p.placement()) continue;
    const Key key{p.placement().hash(), g.dtype(), g.sbp().to_string(), p.sbp().to_string()};
    auto [it, fresh] = index.emplace(key, buckets.size());
    if (fresh) buckets.emplace_back();
    buckets[it->second].push_back({p, g, g.to_local()});
  }
  for (const auto& bucket : buckets) {
    const Placement& pl = bucket.front().param.placement();
    const NdSbp from = bucket.front().grad.sbp(), to = bucket.front().param.sbp();
    uint32_t detail = dist::kMixSeed;
    for (const Waiting& w : bucket) detail = hash_layout(w.grad.shape(), w.grad.dtype(), to, detail);
    const RecordOp record(pl, "reduce gradients", detail);
    if (pl.contains(me)) {
      int64_t n = 0;
      for (const Waiting& w : bucket) n += w.local.numel();
      Tensor flat = Tensor::empty({n}, bucket.front().grad.dtype());
      int64_t at = 0;
      // The shards, one after another in `flat`; `piece` is w's place there.
      auto piece = [&](const Waiting& w, int64_t at) {
        return Tensor::view_of(flat, w.local.shape(), contiguous_strides(w.local.shape()), at);
      };
      for (const Waiting& w : bucket) {
        kernels::copy_into(piece(w, at), w.local);
        at += w.local.numel();
      }
      // Partial where the parameter is broadcast: summed over that axis' groups.
      for (size_t a = 0; a < from.size(); ++a)
        if (from[a].is_partial() && to[a].is_broadcast() && pl.mesh_shape()[a] > 1)
          dist::group(pl.axis_group(me, int64_t(a))).all_reduce_sum(flat);
      at = 0;
      for (const Waiting& w : bucket) {
        w.param.set_grad(make_global(piece(w, at), w.param.shape(), pl, to));
        at += w.local.numel();
      }
    } else {
      for (const Waiting& w : bucket) w.param.set_grad(make_global(w.local, w.param.shape(), pl, to));
    }
  }
}

Tensor take_waiting_grad(const Tensor& param) {
  finish_backward();
  TensorImpl& impl = param.impl();
  if (!impl.grad_unsettled || !impl.grad) return Tensor();
  Tensor g(impl.grad);
  param.set_grad(Tensor());
  return g;
}

}  // namespace globe
