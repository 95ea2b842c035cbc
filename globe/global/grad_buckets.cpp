#include "globe/global/grad_buckets.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>

#include "globe/autograd/engine.h"
#include "globe/base/trace.h"
#include "globe/core/deterministic.h"
#include "globe/core/grad_mode.h"
#include "globe/dist/runtime.h"
#include "globe/global/boxing.h"
#include "globe/global/boxing_1d.h"
#include "globe/global/global_tensor.h"
#include "globe/global/leaf_gradients.h"
#include "globe/global/op_history.h"
#include "globe/global/zero_layout.h"
#include "globe/kernels/device_kernels.h"

namespace globe {

namespace {

struct Pending {
  Tensor param, grad, local;  // local: the gradient's shard on this rank
};

// Gradients that share a reduction: the same placement, dtype and layout change. Compared, never
// ordered or formatted: grad_ready builds one per gradient on every backward pass.
struct Key {
  size_t placement;  // hash
  DType dtype;
  NdSbp from, to;
  bool operator==(const Key&) const = default;
};

Key key_of(const Tensor& param, const Tensor& grad) {
  return {param.placement().hash(), grad.dtype(), grad.sbp(), param.sbp()};
}

// A pending gradient of `param` that a bucket can reduce, or nothing.
bool pending(const Tensor& param, Pending& w) {
  if (!detail::grad_pending(param)) return false;
  const Tensor g = Tensor(param.impl().grad);
  if (!g.is_global() || !param.is_global() || g.placement() != param.placement()) return false;
  w = {param, g, g.to_local()};
  return true;
}

// set_grad_reduce_dtype's value (the same on every rank).
std::optional<DType>& reduce_dtype_setting() {
  static std::optional<DType> dtype;
  return dtype;
}

// Whether `w`'s shard can be summed where it lies: contiguous, in the reduction's dtype, and
// nothing but this gradient refers to its bytes. Each count below is the least there can be (the
// parameter's grad, the global's meta, the shard, the Pending's view of it), so any other holder
// (another parameter with the same gradient, a node input, a view) makes the flight copy instead.
bool reducible_in_place(const Pending& w, DType reduce) {
  const Tensor& l = w.local;
  const Tensor& shard = shard_of(w.grad);
  return l.dtype() == reduce && l.is_contiguous() && w.grad.impl_ptr().use_count() == 2 &&
         w.grad.impl().global.use_count() == 1 && shard.impl_ptr().use_count() == 1 &&
         l.impl_ptr().use_count() == 1 && l.storage().use_count() == 2;
}

// One bucket's reduction: its gradients' shards packed one after another into `flat`, summed in
// one all-reduce over the ranks that hold partial sums of the same block (the mesh axes where the
// gradients are partial and the parameters broadcast), then handed to the parameters as views of
// `flat` in their own layout. A flight of one gradient that nothing else refers to sums it in its
// own bytes instead, with no copy (DDP's gradient_as_bucket_view, for what fills a bucket alone).
// Started at once; finish() waits.
class Flight {
 public:
  explicit Flight(std::vector<Pending> members) : members_(std::move(members)) {
    const Pending& first = members_.front();
    const Placement& pl = first.param.placement();
    const NdSbp& from = first.grad.sbp();
    const NdSbp& to = first.param.sbp();
    uint32_t detail = dist::kMixSeed;
    for (const Pending& w : members_) detail = hash_layout(w.grad.shape(), w.grad.dtype(), to, detail);
    const RecordOp record(pl, "reduce gradients", detail);
    const int me = dist::world_rank();
    if (!pl.contains(me)) return;  // empty shards: nothing to send or wait for
    int64_t n = 0;
    for (const Pending& w : members_) n += w.local.numel();
    // Every element copied in below, on the gradients' device; in the reduction's dtype.
    const DType dt = first.grad.dtype();
    const DType reduce = is_floating(dt) ? reduce_dtype_setting().value_or(dt) : dt;
    in_place_ = members_.size() == 1 && reducible_in_place(first, reduce);
    if (in_place_) {
      flat_ = Tensor::view_of(first.local, {n}, {1}, first.local.offset());
    } else {
      flat_ = Tensor::uninitialized({n}, reduce, first.local.device());
      for (size_t i = 0, at = 0; i < members_.size(); at += size_t(members_[i++].local.numel()))
        kernels::device_copy(piece(i, int64_t(at)), members_[i].local);
    }
    std::vector<int64_t> axes;
    for (size_t a = 0; a < from.size(); ++a)
      if (from[a].is_partial() && to[a].is_broadcast() && pl.mesh_shape()[a] > 1) axes.push_back(int64_t(a));
    if (axes.empty()) return;
    const trace::Span op(trace::Kind::op, "reduce gradients");  // the all-reduce is recorded under them
    trace::Span layout(trace::Kind::layout);
    if (layout) layout->name = "gradient bucket " + from.to_string() + " -> " + to.to_string();
    dist::Communicator& comm = dist::group(pl.axes_group(me, axes));
    if (deterministic()) detail::tree_all_reduce(flat_, flat_, comm);  // in the leaves' tree, at once
    else req_ = comm.start_all_reduce_sum(flat_);
  }

  bool test() { return req_.test(); }
  bool holds(const Tensor& param) const {
    return std::any_of(members_.begin(), members_.end(), [&](const Pending& w) { return w.param.same(param); });
  }

  // Waits for the sum and gives each parameter its gradient, unless the parameter's gradient was
  // replaced meanwhile (zero_grad, set_grad).
  void finish() {
    req_.wait();
    const bool mine = flat_.defined();
    for (size_t i = 0, at = 0; i < members_.size(); at += size_t(members_[i++].local.numel())) {
      const Pending& w = members_[i];
      if (w.param.impl().grad != w.grad.impl_ptr()) continue;
      Tensor local = mine && !in_place_ ? piece(i, int64_t(at)) : w.local;
      // Summed in a reduce dtype: widened back.
      if (local.dtype() != w.grad.dtype()) local = kernels::device_convert(local, w.grad.dtype());
      w.param.set_grad(make_global(local, w.param.shape(), w.param.placement(), w.param.sbp()));
    }
  }

 private:
  Tensor piece(size_t i, int64_t at) const {
    const Shape& shape = members_[i].local.shape();
    return Tensor::view_of(flat_, shape, contiguous_strides(shape), at);
  }

  std::vector<Pending> members_;
  Tensor flat_;
  bool in_place_ = false;  // flat_ is the one member's own shard
  dist::Request req_;
};

// Gradients gathered by key, in first-seen order (the same on every rank).
struct Bucket {
  Key key;
  std::vector<Pending> members;
  int64_t bytes = 0;
};
using Buckets = std::vector<Bucket>;

Bucket& join(Buckets& buckets, const Pending& w) {
  const Key key = key_of(w.param, w.grad);
  auto it = std::find_if(buckets.begin(), buckets.end(), [&](const Bucket& b) { return b.key == key; });
  if (it == buckets.end()) it = buckets.insert(buckets.end(), Bucket{key, {}, 0});
  it->members.push_back(w);
  it->bytes += w.local.numel() * int64_t(itemsize(w.grad.dtype()));
  return *it;
}

int64_t default_bucket_bytes() {
  const char* v = std::getenv("GLOBE_BUCKET_MB");
  return v ? int64_t(std::atof(v) * double(1 << 20)) : int64_t(4) << 20;
}

// Overlap state of this process (global ops run on one thread per rank).
struct Overlap {
  int64_t bucket_bytes = default_bucket_bytes();
  int no_sync = 0;
  Buckets open;  // collecting gradients, in the order they opened
  std::deque<Flight> flying;  // started, in order
  std::map<const TensorImpl*, std::weak_ptr<TensorImpl>> zero2;  // reduce_into_update_layout
};

Overlap& overlap() {
  static auto* o = new Overlap();  // never destroyed: flights may complete at exit
  return *o;
}

void launch(std::vector<Pending> members) {
  static const bool at_exit = [] { return std::atexit([] { detail::finish_reductions(); }) == 0; }();
  (void)at_exit;
  NoGradGuard no_grad;
  overlap().flying.emplace_back(std::move(members));
}

// Completes flights, oldest first, while `more()`.
template <class More>
void land(More more) {
  auto& flying = overlap().flying;
  while (more()) {
    Flight f = std::move(flying.front());
    flying.pop_front();
    f.finish();
  }
}

bool zero_stage2(const Tensor& param) {
  auto& z = overlap().zero2;
  auto it = z.find(&param.impl());
  if (it == z.end()) return false;
  if (!it->second.expired()) return true;
  z.erase(it);
  return false;
}

// ZeRO stage 2: `w`'s gradient reduced into `into` now (the whole partial one let go); false where
// that is the parameter's own layout (no axis to split), for a bucket.
bool reduce_to(Pending& w, const NdSbp& into) {
  if (into == w.param.sbp()) return false;
  NoGradGuard no_grad;
  const Tensor param = w.param;
  Tensor whole = std::move(w.grad);
  w = {};
  param.set_grad(Tensor());
  param.set_grad(box(whole, param.placement(), into));
  return true;
}

}  // namespace

void detail::grad_ready(const Tensor& leaf) {
  Overlap& o = overlap();
  Pending w;
  if (o.bucket_bytes <= 0 || o.no_sync > 0 || !pending(leaf, w)) return;
  if (zero_stage2(leaf) && reduce_to(w, zero_layout(leaf))) return;
  // A gradient that fills a bucket by itself starts alone (summed in its own bytes where it can
  // be), leaving the open bucket to the smaller ones.
  if (w.local.numel() * int64_t(itemsize(w.grad.dtype())) >= o.bucket_bytes) {
    std::vector<Pending> alone;
    alone.push_back(std::move(w));  // the flight holds the only Pending (reducible_in_place counts)
    launch(std::move(alone));
    return;
  }
  Bucket& b = join(o.open, w);
  if (b.bytes < o.bucket_bytes) return;
  std::vector<Pending> full = std::move(b.members);
  o.open.erase(o.open.begin() + (&b - o.open.data()));
  launch(std::move(full));
}

void detail::backward_done() {
  Buckets open = std::move(overlap().open);
  overlap().open.clear();
  for (Bucket& b : open) launch(std::move(b.members));
}

void detail::progress_reductions() {
  for (Flight& f : overlap().flying)
    if (!f.test()) break;  // they complete in order
}

void detail::finish_reduction(const Tensor& leaf) {
  const auto& flying = overlap().flying;
  land([&] { return std::any_of(flying.begin(), flying.end(), [&](const Flight& f) { return f.holds(leaf); }); });
}

void detail::finish_reductions() {
  land([] { return !overlap().flying.empty(); });
}

size_t detail::reductions_in_flight() { return overlap().flying.size(); }

void resolve_pending_grads(const std::vector<Tensor>& params, const std::function<NdSbp(const Tensor&)>& reduce_into) {
  GLOBE_CHECK(!detail::backward_paused(), "[resolve_pending_grads] a backward pass is paused, waiting for ranks of ",
              "another placement, and may still add to these gradients: call finish_backward() first");
  detail::finish_reductions();
  // What is still pending: straight into its reduce_into layout, else in buckets in first-seen
  // order (every rank sees the same parameters in the same order).
  NoGradGuard no_grad;
  Buckets buckets;
  for (const Tensor& p : params) {
    Pending w;
    if (!pending(p, w)) continue;
    if (!reduce_into || !reduce_to(w, reduce_into(p))) join(buckets, w);
  }
  for (Bucket& b : buckets) Flight(std::move(b.members)).finish();
}

void set_grad_bucket_bytes(int64_t bytes) { overlap().bucket_bytes = bytes; }

int64_t grad_bucket_bytes() { return overlap().bucket_bytes; }

void set_grad_reduce_dtype(std::optional<DType> dtype) {
  GLOBE_CHECK(!dtype || is_floating(*dtype), "[set_grad_reduce_dtype] expects a floating dtype, got ",
              dtype_name(*dtype));
  reduce_dtype_setting() = dtype;
}
std::optional<DType> grad_reduce_dtype() { return reduce_dtype_setting(); }

NoSyncGuard::NoSyncGuard() { ++overlap().no_sync; }
NoSyncGuard::~NoSyncGuard() { --overlap().no_sync; }

void reduce_into_update_layout(const std::vector<Tensor>& params, bool on) {
  for (const Tensor& p : params)
    if (on) overlap().zero2[&p.impl()] = p.impl_ptr();
    else overlap().zero2.erase(&p.impl());
}

}  // namespace globe
