// Boxing planner. Same placement: a sequence of single-mesh-axis steps, each run inside that
// axis's sub-groups with the direct collective (boxing_1d.cpp). When no sequence of direct steps
// exists (e.g. (S(0), S(0)) -> (B, S(0))), the fallback goes through broadcast: every non-B axis
// is gathered (last axis first), then the target layout is sliced out locally. Different
// placements: the value is made whole on the source ranks and sent to the destination ranks
// that lack it; a same-shaped same-layout move is a direct shard-to-shard send.
#include "globe/global/boxing.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "globe/base/trace.h"
#include "globe/core/deterministic.h"
#include "globe/dist/runtime.h"
#include "globe/global/boxing_1d.h"
#include "globe/global/global_tensor.h"
#include "globe/global/op_history.h"
#include "globe/kernels/device_kernels.h"

namespace globe {

namespace {

// Whether converting mesh axis f from cur[f] to `to` can run inside f's sub-groups: no inner axis
// may split a tensor dim that the step touches.
bool step_is_direct(const NdSbp& cur, size_t f, const Sbp& to) {
  std::set<int64_t> touched;
  if (cur[f].is_split()) touched.insert(cur[f].dim);
  if (to.is_split()) touched.insert(to.dim);
  for (size_t a = f + 1; a < cur.size(); ++a)
    if (cur[a].is_split() && touched.count(cur[a].dim)) return false;
  return true;
}

// What a step on mesh axis f of a placement needs besides its data: the block the axis' group
// shares (the shard with axis f made whole) and that group's communicator.
struct StepSite {
  Shape block;
  dist::Communicator* comm = nullptr;
};

// The site of a step, remembered for the last one asked: a boxing repeated on the same shape,
// placement and layout (a loss or a norm every step) finds it without a look-up.
const StepSite& step_site(const Shape& shape, const Placement& p, const NdSbp& cur, size_t f) {
  static struct {
    Shape shape;
    Placement placement;
    NdSbp cur;
    size_t f = 0;
    StepSite site;
  } last;
  if (last.site.comm != nullptr && last.f == f && last.cur == cur && last.shape == shape && last.placement == p)
    return last.site;
  const int me = dist::world_rank();
  NdSbp whole_axis = cur;
  whole_axis[f] = sbp::broadcast;
  last.site.comm = nullptr;  // unset until the whole entry is written: any step below may throw
  last.site.block = local_block(shape, p, whole_axis, me).shape;
  last.shape = shape;
  last.placement = p;
  last.cur = cur;
  last.f = f;
  last.site.comm = &dist::group(p.axis_group(me, int64_t(f)));
  return last.site;
}

// One step on mesh axis f, started (detail::start_box_axis). `local` is this rank's shard under `cur`.
detail::Started start_step(const Tensor& local, const Shape& shape, const Placement& p, NdSbp& cur, size_t f,
                           const Sbp& to) {
  const StepSite& site = step_site(shape, p, cur, f);
  trace::Span span(trace::Kind::layout);  // what the step's collective is recorded under
  if (span) span->name = cur[f].to_string() + " -> " + to.to_string() + " on mesh axis " + std::to_string(f);
  auto out = detail::start_box_axis(local, site.block, *site.comm, cur[f], to);
  cur[f] = to;
  return out;
}

// Per asker (an op's input, or "" for to_global), per path: how often this rank ran it.
std::map<std::string, std::map<std::string, int64_t>>& path_counts() {
  static std::map<std::string, std::map<std::string, int64_t>> counts;
  return counts;
}
std::string& boxing_for() {
  static std::string what;
  return what;
}

// The steps from one layout to another on a mesh, and the path's name: they depend only on the
// mesh's shape and the two layouts, so each is planned once and cached (a small boxing is a few
// microseconds; planning and naming the path cost a good part of that).
struct Plan {
  NdSbp from;                                 // with every one-rank axis as broadcast
  std::vector<std::pair<size_t, Sbp>> steps;  // mesh axis, its new SBP
  std::string path;                           // as boxing_paths() reports it
  // Where this path's count for the last asker lives in path_counts() (valid while
  // counted_epoch is the counts' epoch): a repeated boxing counts itself without two look-ups.
  mutable std::string counted_for;
  mutable int64_t* count = nullptr;
  mutable uint64_t counted_epoch = 0;
};

// Bumped when path_counts() is cleared, so no plan keeps a pointer into it.
uint64_t& path_counts_epoch() {
  static uint64_t epoch = 1;
  return epoch;
}

void count_path(const Plan& plan) {
  if (plan.count == nullptr || plan.counted_epoch != path_counts_epoch() || plan.counted_for != boxing_for()) {
    plan.count = nullptr;  // unset until the whole entry is written
    plan.counted_for = boxing_for();
    plan.counted_epoch = path_counts_epoch();
    plan.count = &path_counts()[boxing_for()][plan.path];
  }
  ++*plan.count;
}

const Plan& plan_of(const Placement& p, const NdSbp& from_in, const NdSbp& to_in);

// plan_of(), the last one asked remembered: a repeated boxing skips building the key.
const Plan& plan_for(const Placement& p, const NdSbp& from_in, const NdSbp& to_in) {
  static struct {
    const Plan* plan = nullptr;
    Shape mesh;
    bool det = false;
    NdSbp from, to;
  } last;
  if (last.plan != nullptr && last.det == deterministic() && last.from == from_in && last.to == to_in &&
      last.mesh == p.mesh_shape())
    return *last.plan;
  last.plan = nullptr;  // unset until the whole entry is written: any step below may throw
  const Plan& plan = plan_of(p, from_in, to_in);
  last.mesh = p.mesh_shape();
  last.det = deterministic();
  last.from = from_in;
  last.to = to_in;
  last.plan = &plan;  // map nodes never move
  return plan;
}

const Plan& plan_of(const Placement& p, const NdSbp& from_in, const NdSbp& to_in) {
  // Keyed by numbers, not by the layouts' names.
  static std::map<std::vector<int64_t>, Plan> plans;
  static thread_local std::vector<int64_t> key;  // reused: a look-up allocates nothing
  key.assign(p.mesh_shape().begin(), p.mesh_shape().end());
  key.push_back(deterministic());  // the mode orders partial sums (below)
  for (const NdSbp* layout : {&from_in, &to_in})
    for (const Sbp& s : *layout) key.insert(key.end(), {int64_t(s.kind), s.is_split() ? s.dim : 0});
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  Plan plan;
  // On a mesh axis of one rank every layout holds the same block (the whole extent, its value):
  // plan with broadcast there, so such an axis moves nothing and never blocks another axis' step.
  NdSbp cur = from_in, to = to_in;
  for (size_t f = 0; f < cur.size(); ++f)
    if (p.mesh_shape()[f] == 1) cur[f] = to[f] = sbp::broadcast;
  plan.from = cur;
  if (cur == to) return plans.emplace(key, std::move(plan)).first->second;
  std::string path = from_in.to_string() + " -> " + to_in.to_string() + ": per axis (";
  auto take_step = [&](size_t f, const Sbp& s) {
    path += (path.back() == '(' ? "" : ", ") + std::to_string(f) + ": " + cur[f].to_string() + " -> " + s.to_string();
    plan.steps.emplace_back(f, s);
    cur[f] = s;
  };
  // Deterministic mode (core/deterministic.h): partial sums on two mesh axes are pieces of one
  // leaf tree, the inner axis holding the smaller subtrees (splits of one dim nest outer axis
  // first). So an outer axis' partial sum is taken only after the inner ones: an inner partial
  // that the target keeps is summed first (P -> B, inner axes first as below) and made partial
  // again last (B -> P, a local step).
  std::vector<size_t> partial_again;
  if (deterministic())
    for (size_t a = 1; a < cur.size(); ++a)
      if (cur[a].is_partial() && to[a].is_partial())
        for (size_t f = 0; f < a; ++f)
          if (cur[f].is_partial() && !to[f].is_partial()) {
            partial_again.push_back(a);
            to[a] = sbp::broadcast;
            break;
          }
  // Local slices (B -> S) first, outer axes first: each cuts the block the outer axes left, as
  // nested splits do; done inner-first, an inner split would block the outer one.
  for (size_t f = 0; f < cur.size(); ++f)
    if (cur[f].is_broadcast() && to[f].is_split() && step_is_direct(cur, f, to[f])) take_step(f, to[f]);
  // Greedy: fix differing axes, last first, while a direct step exists.
  for (bool progressed = true; progressed && cur != to;) {
    progressed = false;
    for (size_t f = cur.size(); f-- > 0;) {
      if (cur[f] != to[f] && step_is_direct(cur, f, to[f])) {
        take_step(f, to[f]);
        progressed = true;
        break;
      }
    }
  }
  if (cur == to) {
    for (size_t a : partial_again) take_step(a, sbp::partial_sum);
    plan.path = path + ")";
  } else {
    for (size_t a : partial_again) to[a] = to_in[a];
    // Fallback through broadcast: gather every axis (inner first), then slice (outer first).
    plan.steps.clear();
    cur = plan.from;
    for (size_t f = cur.size(); f-- > 0;)
      if (!cur[f].is_broadcast()) plan.steps.emplace_back(f, sbp::broadcast), cur[f] = sbp::broadcast;
    for (size_t f = 0; f < cur.size(); ++f)
      if (cur[f] != to[f]) plan.steps.emplace_back(f, to[f]);
    plan.path = from_in.to_string() + " -> " + to_in.to_string() + ": fallback (gather every axis, then slice)";
  }
  return plans.emplace(key, std::move(plan)).first->second;
}

// Same placement, this rank a member: every step but the last runs, the last is started.
detail::Started start_same_placement(const Tensor& local, const Shape& shape, const Placement& p, const NdSbp& from,
                                     const NdSbp& to) {
  const Plan& plan = plan_for(p, from, to);
  if (plan.steps.empty()) return {local, nullptr};
  NdSbp cur = plan.from;
  Tensor x = local;
  for (size_t i = 0; i + 1 < plan.steps.size(); ++i)
    x = start_step(x, shape, p, cur, plan.steps[i].first, plan.steps[i].second).get();
  count_path(plan);
  return start_step(x, shape, p, cur, plan.steps.back().first, plan.steps.back().second);
}

Tensor box_same_placement(const Tensor& local, const Shape& shape, const Placement& p, const NdSbp& from,
                          const NdSbp& to) {
  return start_same_placement(local, shape, p, from, to).get();
}

int index_in(const std::vector<int>& v, int r) {
  return int(std::find(v.begin(), v.end(), r) - v.begin());
}

// Different placements.
Tensor box_across(const Tensor& x, const Placement& dp, const NdSbp& dsbp, int tag) {
  const Placement& sp = x.placement();
  const NdSbp& ssbp = x.sbp();
  const Shape& shape = x.shape();
  const int me = dist::world_rank();
  const bool in_src = sp.contains(me), in_dst = dp.contains(me);
  if (!in_src && !in_dst) return Tensor::empty(Shape(shape.size(), 0), x.dtype());
  const std::vector<int> members = union_ranks(sp, dp);
  dist::Communicator& comm = dist::group(members);
  trace::Span span(trace::Kind::layout);
  if (span) span->name = "move " + sp.to_string() + " -> " + dp.to_string();
  const Tensor& local = shard_of(x);

  // A move between meshes of one shape with one layout: member i sends its shard to member i.
  if (sp.mesh_shape() == dp.mesh_shape() && ssbp == dsbp) {
    // Received in full (or replaced by the local shard): no zero-fill.
    // The shard lands on the destination placement's device ("cpu" -> "cuda" moves it there).
    Tensor out = in_dst ? Tensor::uninitialized(local_shape(shape, dp, dsbp, me), x.dtype(), dp.local_device())
                        : Tensor();
    if (in_src) {
      const int peer = dp.ranks()[sp.index_of(me)];
      if (peer == me) out = kernels::copy_to_device(local, dp.local_device());
      else dist::send_later(comm.isend(kernels::device_dense(local), index_in(members, peer), tag));
    }
    if (in_dst) {
      const int peer = sp.ranks()[dp.index_of(me)];
      if (peer != me) comm.irecv(out, index_in(members, peer), tag).wait();
    }
    return in_dst ? out : Tensor::empty(Shape(shape.size(), 0), x.dtype());
  }

  // General: whole value on the source ranks, sent to destination ranks outside the source.
  Tensor whole;
  if (in_src) {
    whole = box_same_placement(local, shape, sp, ssbp, replicated(sp.mesh_ndim()));
  }
  std::vector<int> needy;
  for (int r : dp.ranks())
    if (!sp.contains(r)) needy.push_back(r);
  for (size_t k = 0; k < needy.size(); ++k) {
    const int sender = sp.ranks()[k % sp.ranks().size()];
    if (sender == me) dist::send_later(comm.isend(kernels::device_dense(whole), index_in(members, needy[k]), tag));
    if (needy[k] == me) {
      whole = Tensor::uninitialized(shape, x.dtype(), dp.local_device());
      comm.irecv(whole, index_in(members, sender), tag).wait();
    }
  }
  if (!in_dst) return Tensor::empty(Shape(shape.size(), 0), x.dtype());
  return box_same_placement(kernels::copy_to_device(whole, dp.local_device()), shape, dp, replicated(dp.mesh_ndim()),
                            dsbp);
}

}  // namespace

namespace {

// box(), its last step started within one placement (start_box), run to the end otherwise.
detail::Started start(const Tensor& x, const Placement& placement, const NdSbp& sbp, int move_tag) {
  GLOBE_CHECK(x.is_global(), "[to_global] box() needs a global tensor");
  const NdSbp to = normalize_sbp(sbp, x.dim(), placement.mesh_ndim(), "to_global");
  const Placement& from_p = x.placement();
  const NdSbp& from_sbp = x.sbp();
  const bool same_placement = from_p == placement;
  if (same_placement && from_sbp == to) return {x, nullptr};
  // Consistency mode compares the ranks' op sequences; tagged moves (a pipeline's) are posted in
  // different orders on the two sides by design and carry their own header and size checks.
  if (dist::consistency_checks() && move_tag == kMoveTag) {
    std::vector<int> members = union_ranks(from_p, placement);
    if (std::count(members.begin(), members.end(), dist::world_rank()))
      dist::group(members).check_consistency("to_global " + describe(x) + " -> " + placement.to_string() + " " +
                                             to.to_string());
  }
  // Recorded in the histories of both placements; tagged moves are not (their order differs).
  std::optional<RecordOp> from, into;
  if (move_tag == kMoveTag) {
    const uint32_t detail = hash_layout(x.shape(), x.dtype(), to,
                                        hash_layout(x.shape(), x.dtype(), from_sbp, dist::mix(dist::kMixSeed, placement.hash())));
    if (!same_placement) from.emplace(from_p, "to_global", detail);
    into.emplace(placement, "to_global", detail);
  }
  detail::Started local;
  if (!same_placement) local.value = box_across(x, placement, to, move_tag);
  else if (placement.contains(dist::world_rank())) local = start_same_placement(shard_of(x), x.shape(), placement, from_sbp, to);
  else local.value = shard_of(x);
  if (!local.finish) return {make_global(local.value, x.shape(), placement, to), nullptr};
  return {Tensor(), [finish = std::move(local.finish), shape = x.shape(), placement, to] {
            return make_global(finish(), shape, placement, to);
          }};
}

}  // namespace

Tensor box(const Tensor& x, const Placement& placement, const NdSbp& sbp, int move_tag) {
  return start(x, placement, sbp, move_tag).get();
}

std::function<Tensor()> start_box(const Tensor& x, const NdSbp& sbp) {
  detail::Started s = start(x, x.placement(), sbp, kMoveTag);
  if (s.finish) return std::move(s.finish);
  return [value = std::move(s.value)] { return value; };
}

double boxing_cost_bytes(const Sbp& from, const Sbp& to, double block_bytes, int group_size) {
  if (from == to || group_size <= 1) return 0.0;
  const double p = group_size, frac = (p - 1) / p;
  using K = Sbp::Kind;
  // Making a value partial is local, but it is a debt: someone reduces it later. Price it as the
  // reduce-scatter it will take, so a signature is not chosen just because P is free to enter.
  if (to.kind == K::partial_sum) return block_bytes * frac;
  if (from.kind == K::broadcast) return 0.0;                    // B -> S: local slice
  if (from.kind == K::split && to.kind == K::broadcast) return block_bytes * frac;  // all-gather
  if (from.kind == K::split) return block_bytes * frac / p;     // all-to-all
  if (to.kind == K::split) return block_bytes * frac;           // reduce-scatter
  return 2 * block_bytes * frac;                                // all-reduce
}

std::vector<std::pair<std::string, int64_t>> boxing_paths() {
  std::map<std::string, int64_t> flat;
  for (const auto& [what, paths] : path_counts())
    for (const auto& [path, n] : paths) flat[(what.empty() ? std::string("to_global") : what) + ": " + path] += n;
  return {flat.begin(), flat.end()};
}

void reset_boxing_paths() {
  path_counts().clear();
  ++path_counts_epoch();
}

BoxingFor::BoxingFor(std::string what) : prev_(std::exchange(boxing_for(), std::move(what))) {}
BoxingFor::~BoxingFor() { boxing_for() = std::move(prev_); }

}  // namespace globe
