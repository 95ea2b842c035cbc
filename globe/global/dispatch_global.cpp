// Global op dispatch (docs/design.md §5): every op whose inputs are global comes here from dispatch().
//   1. all inputs global, on one placement (else an error naming both);
//   2. output metadata from the op's infer() on the logical shapes;
//   3. per mesh axis, the op's cheapest valid SBP signature (no boxing if possible, else the
//      fewest bytes moved, ties to the earlier declaration; identical on every rank);
//   4. inputs boxed to it, the local kernel run on the shards, the result wrapped as global.
#include <limits>
#include <sstream>

#include "globe/dist/runtime.h"
#include "globe/global/boxing.h"
#include "globe/global/hooks.h"
#include "globe/global/global_tensor.h"
#include "globe/global/op_history.h"
#include "globe/ops/op.h"

namespace globe {

namespace {

std::string layouts(const std::vector<Tensor>& inputs) {
  std::ostringstream os;
  for (size_t i = 0; i < inputs.size(); ++i) os << (i ? ", " : "") << describe(inputs[i]);
  return os.str();
}

void check_inputs(const Op& op, const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    GLOBE_CHECK(t.is_global(), "[", op.name(), "] mixes local and global tensors: ", layouts(inputs),
                "; convert the local one with to_global(placement, sbp)");
  for (const Tensor& t : inputs)
    GLOBE_CHECK(t.placement() == inputs[0].placement(), "[", op.name(), "] inputs are on different placements: ",
                inputs[0].placement().to_string(), " and ", t.placement().to_string(),
                "; move one with to_global(placement)");
}

// Bytes of the value mesh axis `axis`'s groups share (the block left by the outer axes), taken at
// the first rank's coordinates: with uneven shards another rank's block differs, and every rank
// must price the candidates identically to choose the same one.
double block_bytes(const Tensor& t, const Placement& p, size_t axis) {
  NdSbp s = t.sbp();
  for (size_t a = axis; a < s.size(); ++a) s[a] = sbp::broadcast;
  return double(numel_of(local_block(t.shape(), p, s, p.first()).shape)) * double(itemsize(t.dtype()));
}

// Whether boxing `from` into `to` sums partial values on some axis (P there, not P after): the
// backward then reads the sum, and the gradient it computes from it is complete where one computed
// from the partial values would be partial again.
bool sums_partials(const NdSbp& from, const NdSbp& to) {
  for (size_t a = 0; a < from.size() && a < to.size(); ++a)
    if (from[a].is_partial() && !to[a].is_partial()) return true;
  return false;
}

// Deterministic mode (docs/design.md §10): partial sums come only from ops that sum leaf by leaf
// and go only into the boxing that adds them in the leaves' tree; an op applied to partial values
// (scaling them, adding two) would add them in another order.
bool tree_ordered(const Op& op, const SbpSignature& sig) {
  for (const Sbp& s : sig.inputs)
    if (s.is_partial()) return false;
  return !sig.output.is_partial() || op.tree_partials();
}

// Deterministic mode: whether `sig` on mesh axis `axis`, after the axes before it chose
// `earlier` (per input), splits each of the op's piece dims into whole pieces.
bool whole_pieces(const Op& op, const std::vector<TensorMeta>& metas, const SbpSignature& sig,
                  const std::vector<std::vector<Sbp>>& earlier, const Placement& p, size_t axis) {
  for (const auto& [i, first, last] : op.piece_dims(metas)) {
    if (!sig.inputs[i].is_split() || sig.inputs[i].dim < first || sig.inputs[i].dim > last) continue;
    if (sig.inputs[i].dim != first) return false;  // not a contiguous block of the run's index
    int64_t parts = p.mesh_shape()[axis], length = 1;
    for (size_t a = 0; a < earlier[i].size(); ++a)
      if (earlier[i][a].is_split() && earlier[i][a].dim == first) parts *= p.mesh_shape()[a];
    for (int64_t d = first; d <= last; ++d) length *= metas[i].shape[size_t(d)];
    if (metas[i].shape[size_t(first)] % parts != 0 || !splits_into_leaves(length, parts)) return false;
  }
  return true;
}

// Per dim of `t`'s shape, the blocks layout `nd` cuts it into on placement p.
Shape parts_of(const Shape& shape, const NdSbp& nd, const Placement& p) {
  Shape parts(shape.size(), 1);
  for (size_t a = 0; a < nd.size(); ++a)
    if (nd[a].is_split()) parts[size_t(nd[a].dim)] *= p.mesh_shape()[a];
  return parts;
}

// The chosen signature on mesh axis a: cheapest total boxing cost, first on ties.
// A bool output is never partial (a sum of truth values is a count): such signatures are skipped.
SbpSignature choose(const Op& op, const std::vector<Tensor>& inputs, const std::vector<TensorMeta>& metas,
                    DType out_dtype, const Placement& p, size_t axis, const std::vector<std::vector<Sbp>>& earlier) {
  const SbpContext ctx{p.mesh_shape()[axis], int64_t(p.size())};
  std::vector<SbpSignature> candidates = op.sbp_signatures(metas, ctx);
  candidates.push_back({std::vector<Sbp>(inputs.size(), sbp::broadcast), sbp::broadcast});
  const SbpSignature* best = nullptr;
  double best_cost = std::numeric_limits<double>::infinity();
  for (const SbpSignature& sig : candidates) {
    if (out_dtype == kBool && sig.output.is_partial()) continue;
    // (an axis of one rank cuts nothing and sums nothing: any signature keeps the order there)
    if (deterministic() && ctx.axis_size > 1 && !(tree_ordered(op, sig) && whole_pieces(op, metas, sig, earlier, p, axis)))
      continue;
    // Bytes moved, plus one per re-laid-out input: a signature needing no boxing at all wins
    // over one whose boxing is merely local (B -> S, S -> P).
    double cost = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Sbp& from = inputs[i].sbp()[axis];
      if (from == sig.inputs[i]) continue;
      cost += 1.0 + boxing_cost_bytes(from, sig.inputs[i], block_bytes(inputs[i], p, axis), int(ctx.axis_size));
    }
    if (cost < best_cost) {
      best_cost = cost;
      best = &sig;
    }
  }
  return *best;
}

}  // namespace

Tensor detail::dispatch_global(const OpPtr& op, const std::vector<Tensor>& inputs) {
  check_inputs(*op, inputs);
  const Placement& p = inputs[0].placement();
  const std::vector<TensorMeta> metas = detail::metas_of(inputs);
  const TensorMeta meta = op->infer(metas);
  const int me = dist::world_rank();
  if (dist::consistency_checks() && p.contains(me))
    dist::group(p.ranks()).check_consistency(op->name() + " " + layouts(inputs));
  const RecordOp record(p, op->name(), hash_layouts(inputs));  // its collectives carry the history

  // Per mesh axis: the signature, then every input boxed to its part of it.
  std::vector<std::vector<Sbp>> in_sbp(inputs.size());
  std::vector<Sbp> out_sbp;
  for (size_t a = 0; a < size_t(p.mesh_ndim()); ++a) {
    SbpSignature sig = choose(*op, inputs, metas, meta.dtype, p, a, in_sbp);
    for (size_t i = 0; i < inputs.size(); ++i) in_sbp[i].push_back(sig.inputs[i]);
    out_sbp.push_back(sig.output);
  }
  const NdSbp out_nd(out_sbp);
  std::vector<Tensor> locals;
  std::vector<Tensor> reduced;  // per input: its value after a reduction (P -> not P), for the backward
  ComputeArgs args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor boxed;
    if (inputs[i].sbp() == NdSbp(in_sbp[i])) {
      boxed = inputs[i];
    } else {
      BoxingFor why(op->name() + " input " + std::to_string(i) + " " + shape_str(inputs[i].shape()));
      boxed = box(inputs[i], p, NdSbp(in_sbp[i]));
      if (sums_partials(inputs[i].sbp(), boxed.sbp())) {
        reduced.resize(inputs.size());
        reduced[i] = boxed;
      }
    }
    locals.push_back(shard_of(boxed));
    args.in_global_shapes.push_back(inputs[i].shape());
    if (deterministic()) args.in_parts.push_back(parts_of(inputs[i].shape(), boxed.sbp(), p));
    if (p.contains(me)) args.in_block_starts.push_back(local_block(inputs[i].shape(), p, boxed.sbp(), me).start);
  }
  Tensor local;
  if (p.contains(me)) {
    args.out = {local_shape(meta.shape, p, normalize_sbp(out_nd, int64_t(meta.shape.size()), p.mesh_ndim(), "dispatch"), me),
                meta.dtype};
    detail::check_devices(*op, locals);
    local = op->compute(locals, args);
    GLOBE_CHECK(local.shape() == args.out.shape, "[", op->name(), "] internal: shard ", describe(local),
                " but the layout ", out_nd.to_string(), " needs ", shape_str(args.out.shape));
  } else {
    local = Tensor::empty(Shape(meta.shape.size(), 0), meta.dtype);
  }
  // The same tensor passed twice (y * y) and reduced for one use is read reduced for both.
  for (size_t i = 0; i < reduced.size(); ++i)
    for (size_t j = 0; j < reduced.size() && !reduced[i].defined(); ++j)
      if (reduced[j].defined() && inputs[j].same(inputs[i])) reduced[i] = reduced[j];
  Tensor out = make_global(local, meta.shape, p, out_nd);
  detail::record_node(op, inputs, out, reduced);
  return out;
}

}  // namespace globe
