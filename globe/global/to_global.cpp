// Tensor::to_global: local -> global (docs/design.md §3) and global -> global boxing (docs/design.md §4), both
// differentiable (docs/design.md §6), plus the hooks that let core autograd and copy_ see global tensors.
#include <optional>
#include <sstream>
#include <utility>

#include "globe/autograd/engine.h"
#include "globe/dist/runtime.h"
#include "globe/global/boxing.h"
#include "globe/global/global_tensor.h"
#include "globe/global/op_history.h"
#include "globe/global/hooks.h"
#include "globe/global/meta_wire.h"
#include "globe/kernels/device_kernels.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"

namespace globe {

namespace {

// Layout changes: recorded in the graph (GraphOp), their forward done by boxing, not by dispatch.
// Global -> global. The gradient goes back to the input's placement and SBP, except that a
// broadcast input may keep a partial-sum gradient (its natural dual: no all-reduce needed), and a
// partial-sum input keeps the gradient as it comes: the gradient of a sum is the same for every
// addend, so a broadcast one stays broadcast (Megatron's all-reduce after a row-parallel layer
// then costs nothing backward) instead of being cut into a partial sum.
class Boxing final : public GraphOp {
 public:
  Boxing() = default;
  explicit Boxing(NdSbp grad_sbp) : grad_sbp_(std::move(grad_sbp)) {}
  std::string name() const override { return "to_global"; }
  // The gradient of a move between placements comes from the destination's ranks; a rank of the
  // source only would wait for them. Consistency mode compares the ranks' sequences of global
  // ops, so there the backward runs through (in program order) instead of pausing.
  bool backward_waits_for_peer(const std::vector<Tensor>& in, const Tensor& out) const override {
    if (dist::consistency_checks()) return false;
    const int me = dist::world_rank();
    return in[0].placement() != out.placement() && in[0].placement().contains(me) && !out.placement().contains(me);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    if (grad_sbp_) return {g.to_global(in[0].placement(), *grad_sbp_)};
    NdSbp target = in[0].sbp();
    if (g.placement() == in[0].placement())
      for (size_t a = 0; a < target.size(); ++a)
        if ((target[a].is_broadcast() && g.sbp()[a].is_partial()) || target[a].is_partial()) target[a] = g.sbp()[a];
    return {g.to_global(in[0].placement(), target)};
  }

 private:
  std::optional<NdSbp> grad_sbp_;  // the caller's choice for the gradient (to_global's third argument)
};

// Global -> this rank's shard: the gradient is each rank's local gradient, as its shard of the
// dual layout.
class ToLocal final : public GraphOp {
 public:
  std::string name() const override { return "to_local"; }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {make_global(contiguous(g), in[0].shape(), in[0].placement(), dual(in[0].sbp()))};
  }
};

// Local -> global: the local gradient is this rank's shard of the dual layout.
class LocalToGlobal final : public GraphOp {
 public:
  std::string name() const override { return "local_to_global"; }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const Tensor& out, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {g.to_global(out.placement(), dual(out.sbp())).to_local()};
  }
};

// Every member's dtype and shard shape (meta_wire.h records), gathered over the placement's ranks
// only (indexed by world rank; other entries stay absent): a pipeline's labels put on the last
// stage must not make every rank meet once per micro-batch.
std::vector<wire::Meta> gather_shapes(const Tensor& local, const Placement& p) {
  const std::vector<int64_t> mine = wire::encode(local.dtype(), local.shape(), NdSbp(), "to_global");
  std::vector<wire::Meta> all(size_t(dist::world_size()));
  const int n = p.size();
  if (n == 1) {
    all[size_t(p.first())] = wire::decode(mine.data());
    return all;
  }
  std::vector<int> members = p.ranks();
  Tensor out = Tensor::empty({int64_t(n) * wire::kWords}, kInt64);
  dist::group(members).all_gather_v(from_vector(mine, {wire::kWords}), out, std::vector<int64_t>(n, wire::kWords));
  const int64_t* d = out.data<int64_t>();
  for (int i = 0; i < n; ++i) all[size_t(members[size_t(i)])] = wire::decode(d + i * wire::kWords);
  return all;
}

// A rank outside the placement learns nothing from the members: it takes its own local tensor as
// the first member's block (the SPMD program gives every rank the same-shaped tensor), which is
// exact for broadcast, partial_sum and evenly divisible splits. Receives check their sizes, so a
// wrong guess is an error where the value is used, never a wrong value.
Shape guess_global_shape(const Tensor& local, const Placement& p, const NdSbp& sbp) {
  Shape global = local.shape();
  for (size_t a = 0; a < sbp.size(); ++a)
    if (sbp[a].is_split()) global[sbp[a].dim] *= p.mesh_shape()[a];
  return global;
}

// The logical shape implied by the members' shards; every member's shard must be its balanced
// block of it.
Shape infer_global_shape(const std::vector<wire::Meta>& rows, const Placement& p, const NdSbp& sbp) {
  const int first = p.first();
  Shape global = rows[size_t(first)].shape;
  // A dim split over mesh axes A: the sum of the extents held along A (other coordinates 0).
  for (int64_t d = 0; d < int64_t(global.size()); ++d) {
    std::vector<bool> splits_d(sbp.size(), false);
    bool any = false;
    for (size_t a = 0; a < sbp.size(); ++a) any |= splits_d[a] = sbp[a].is_split() && sbp[a].dim == d;
    if (!any) continue;
    int64_t total = 0;
    for (int i = 0; i < p.size(); ++i) {
      const auto& c = p.coord_of(i);
      bool on_line = true;
      for (size_t a = 0; a < sbp.size(); ++a) on_line &= splits_d[a] || c[a] == 0;
      const Shape& held = rows[size_t(p.ranks()[size_t(i)])].shape;  // another rank count: checked below
      if (on_line && size_t(d) < held.size()) total += held[size_t(d)];
    }
    global[d] = total;
  }
  std::ostringstream bad;
  for (int r : p.ranks()) {
    const wire::Meta& row = rows[size_t(r)];
    const DType want = rows[size_t(first)].dtype;
    const Shape expect = local_shape(global, p, sbp, r);
    if (row.dtype != want || row.shape != expect)
      bad << " rank " << r << " has " << dtype_name(row.dtype) << shape_str(row.shape) << " but the layout needs "
          << dtype_name(want) << shape_str(expect) << ";";
  }
  GLOBE_CHECK(bad.str().empty(), "[to_global] local tensors do not fit ", p.to_string(), " ", sbp.to_string(),
              " (global shape ", shape_str(global), " inferred from the ranks' shards):", bad.str());
  return global;
}

Tensor local_to_global(const Tensor& local, const Placement& p, const NdSbp& sbp_in) {
  const NdSbp sbp = normalize_sbp(sbp_in, local.dim(), p.mesh_ndim(), "to_global");
  const int me = dist::world_rank();
  const bool member = p.contains(me);
  // Only the layout: local shapes differ on uneven splits, and the exchange below checks shapes and
  // dtypes itself, with a better message than a fingerprint's.
  const RecordOp record(p, "local_to_global", hash_layout(Shape(), kFloat32, sbp));
  const Shape shape = member ? infer_global_shape(gather_shapes(local, p), p, sbp) : guess_global_shape(local, p, sbp);
  Tensor shard = member ? Tensor::uninitialized(local.shape(), local.dtype(), p.local_device())
                        : Tensor::empty(Shape(shape.size(), 0), local.dtype());
  if (member) {
    // The global tensor owns its copy (on the placement's device): an in-place update of one (an
    // optimizer step) never reaches the other.
    kernels::device_copy(shard, kernels::copy_to_device(local, shard.device()));
    // Broadcast axes take the value held at coordinate 0 of that axis (docs/design.md §3).
    for (size_t a = 0; a < sbp.size(); ++a)
      if (sbp[a].is_broadcast() && p.mesh_shape()[a] > 1) dist::group(p.axis_group(me, int64_t(a))).broadcast(shard, 0);
  }
  Tensor out = make_global(shard, shape, p, sbp);
  static const GraphOpPtr kLocalToGlobal = std::make_shared<const LocalToGlobal>();  // stateless: one for all
  detail::record_node(kLocalToGlobal, {local}, out);
  return out;
}

}  // namespace

// ---- lent to the layers below (hooks.h) ------------------------------------------------------

// Deferred reduction: a gradient on the leaf's placement that differs from the leaf's
// layout only by being partial_sum where the leaf is broadcast may wait for its reduction.
bool detail::may_stay_pending(const Tensor& g, const Tensor& leaf) {
  if (!g.is_global() || !leaf.is_global() || g.placement() != leaf.placement()) return false;
  bool differs = false;
  for (size_t a = 0; a < g.sbp().size(); ++a) {
    if (g.sbp()[a] == leaf.sbp()[a]) continue;
    if (!(g.sbp()[a].is_partial() && leaf.sbp()[a].is_broadcast())) return false;
    differs = true;
  }
  return differs;
}

Tensor detail::grad_to_leaf_layout(const Tensor& g, const Tensor& leaf) {
  if (!leaf.is_global() && !g.is_global()) return g;
  GLOBE_CHECK(leaf.is_global() && g.is_global(), "[backward] gradient ", describe(g), " and its leaf ",
              describe(leaf), " are not both global");
  return box(g, leaf.placement(), leaf.sbp());
}

void detail::copy_global(const Tensor& dst, const Tensor& src) {
  if (!dst.is_global()) {
    // A local destination takes the whole value (collective: every rank calls it), e.g. a
    // checkpoint from globe::load (global on {src}) copied into a local module's parameters.
    const Tensor whole = box(src, Placement::all(src.placement().device()), replicated(1));
    kernels::device_copy(dst, kernels::copy_to_device(shard_of(whole), dst.device()));
    return;
  }
  Tensor value = src.is_global() ? box(src, dst.placement(), dst.sbp()) : from_full(src, dst.placement(), dst.sbp());
  kernels::device_copy(shard_of(dst), kernels::copy_to_device(shard_of(value), shard_of(dst).device()));
}

Tensor Tensor::to_local() const {
  if (!is_global()) return *this;
  const Tensor& shard = shard_of(*this);
  Tensor out = Tensor::view_of(shard, shard.shape(), shard.strides(), shard.offset());
  static const GraphOpPtr kToLocal = std::make_shared<const ToLocal>();  // stateless: one for all
  detail::record_node(kToLocal, *this, out);
  return out;
}

Tensor Tensor::to_global(const Placement& p, const NdSbp& sbp) const {
  if (!is_global()) return local_to_global(*this, p, sbp);
  Tensor out = box(*this, p, sbp);
  if (out.same(*this)) return out;
  static const GraphOpPtr kBoxing = std::make_shared<const Boxing>();  // no grad layout: one for all
  detail::record_node(kBoxing, *this, out);
  return out;
}

namespace {
// The boxing's result `out` of `x`, recorded with a node that carries the gradient's layout `g`
// (the same layout too gets its own node).
Tensor with_grad_layout(const Tensor& x, Tensor out, const NdSbp& g) {
  if (out.same(x)) out = make_global(shard_of(x), x.shape(), x.placement(), x.sbp());
  detail::record_node(std::make_shared<const Boxing>(g), {x}, out);
  return out;
}
}  // namespace

Tensor Tensor::to_global(const Placement& p, const NdSbp& sbp, const NdSbp& grad_sbp) const {
  GLOBE_CHECK(is_global(), "[to_global] grad_sbp applies to a global tensor's boxing");
  const NdSbp g = normalize_sbp(grad_sbp, dim(), placement().mesh_ndim(), "to_global grad_sbp");
  return with_grad_layout(*this, box(*this, p, sbp), g);
}

std::function<Tensor()> start_to_global(const Tensor& x, const NdSbp& sbp, const NdSbp& grad_sbp) {
  GLOBE_CHECK(x.is_global(), "[to_global] grad_sbp applies to a global tensor's boxing");
  const NdSbp g = normalize_sbp(grad_sbp, x.dim(), x.placement().mesh_ndim(), "to_global grad_sbp");
  return [x, g, boxed = start_box(x, sbp)] { return with_grad_layout(x, boxed(), g); };
}

Tensor Tensor::to_global(const Placement& p) const {
  GLOBE_CHECK(is_global(), "[to_global] a local tensor needs an sbp too");
  return to_global(p, sbp());
}

Tensor Tensor::to_global(const NdSbp& s) const {
  GLOBE_CHECK(is_global(), "[to_global] a local tensor needs a placement too");
  return to_global(placement(), s);
}

}  // namespace globe
