#include "globe/global/global_tensor.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>

#include "globe/base/free_lists.h"
#include "globe/core/random.h"
#include "globe/dist/runtime.h"
#include "globe/global/boxing.h"
#include "globe/global/hooks.h"
#include "globe/kernels/device_kernels.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"

namespace globe {

namespace {

const GlobalMeta& meta_of(const Tensor& t, const char* op) {
  GLOBE_CHECK(t.is_global(), "[", op, "] needs a global tensor, got local ", describe(t));
  return *t.impl().global;
}

// Whether `local` is local_shape(shape, p, sbp, rank), checked without building that shape: every
// op's output and every boxing passes through make_global.
bool is_local_shape(const Shape& local, const Shape& shape, const Placement& p, const NdSbp& sbp, int rank) {
  if (local.size() != shape.size()) return false;
  const int index = p.index_of(rank);
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t length = index < 0 ? 0 : shape[d];
    for (size_t a = 0; a < sbp.size() && index >= 0; ++a)
      if (sbp[a].is_split() && sbp[a].dim == int64_t(d))
        length = split_range(length, p.mesh_shape()[a], p.coord_of(index)[a]).length;
    if (local[d] != length) return false;
  }
  return true;
}

}  // namespace

Block local_block(const Shape& shape, const Placement& placement, const NdSbp& sbp, int rank) {
  return block_of(shape, placement.mesh_shape(), sbp, placement.coord_of(placement.index_of(rank)));
}

Shape local_shape(const Shape& shape, const Placement& placement, const NdSbp& sbp, int rank) {
  if (!placement.contains(rank)) return Shape(shape.size(), 0);
  return local_block(shape, placement, sbp, rank).shape;
}

Tensor make_global(const Tensor& local, const Shape& shape, const Placement& placement, const NdSbp& sbp) {
  detail::install_hooks();
  GLOBE_CHECK(!local.is_global(), "[make_global] the shard must be a local tensor");
  NdSbp norm = normalize_sbp(sbp, int64_t(shape.size()), placement.mesh_ndim(), "to_global");
  GLOBE_CHECK(is_local_shape(local.shape(), shape, placement, norm, dist::world_rank()), "[make_global] shard ",
              describe(local), " does not match the block ",
              shape_str(local_shape(shape, placement, norm, dist::world_rank())), " of ", shape_str(shape), " under ",
              placement.to_string(), " ", norm.to_string());
  GLOBE_CHECK(local.dtype() != kBool || !norm.any_partial(), "[to_global] a bool tensor cannot be partial_sum ",
              norm.to_string(), ": a sum of truth values is a count; convert it to int64 first");
  // A shard held on another device than the placement's (host data for a "cuda" placement) is
  // copied there, as to_global copies a local tensor: ops on the global tensor find every shard
  // on its placement's device.
  Tensor shard = local;
  if (local.device().type != placement.device_type() && placement.contains(dist::world_rank()))
    shard = kernels::copy_to_device(local, placement.local_device());
  auto impl = detail::make_kept<TensorImpl>();
  impl->shape = shape;
  impl->dtype = local.dtype();
  impl->global = detail::make_kept<GlobalMeta>(GlobalMeta{placement, std::move(norm), std::move(shard)});
  return Tensor(std::move(impl));
}

const Tensor& shard_of(const Tensor& global) { return meta_of(global, "shard_of").local; }

const Placement& Tensor::placement() const { return meta_of(*this, "placement").placement; }
const NdSbp& Tensor::sbp() const { return meta_of(*this, "sbp").sbp; }

// ---- creation ---------------------------------------------------------------------------------

namespace {

// A global tensor whose shard is filled by fill(shard, block) where it lives, on the placement's
// device (through that device's kernel table); P axes other than coordinate 0 hold zeros (the value
// is the first rank's, as for B -> P). Ranks outside the placement hold an empty CPU shard.
template <class Fill>
Tensor create(const Shape& shape, const Placement& p, const NdSbp& sbp, DType dtype, Fill&& fill) {
  NdSbp norm = normalize_sbp(sbp, int64_t(shape.size()), p.mesh_ndim(), "create");
  const int me = dist::world_rank();
  if (!p.contains(me)) return make_global(Tensor::empty(local_shape(shape, p, norm, me), dtype), shape, p, norm);
  Tensor local = Tensor::empty(local_shape(shape, p, norm, me), dtype, p.local_device());
  const auto& coord = p.coord_of(p.index_of(me));
  bool zero = false;
  for (size_t a = 0; a < norm.size(); ++a) zero |= norm[a].is_partial() && coord[a] != 0;
  if (!zero) fill(local, local_block(shape, p, norm, me));
  return make_global(local, shape, p, norm);
}

// The shard's block of the global random tensor of `shape`, drawn on the shard's device from the
// stream s: the same values at the same logical positions on every device and layout.
void fill_random(kernels::RandomKind kind, const Tensor& shard, const RandomStream& s, const Shape& shape,
                 const Block& b, const kernels::RandomParams& params) {
  kernels::kernels_for(shard).random_fill(kind, shard, s, shape, b.start, params);
}

}  // namespace

Tensor randn(const Shape& shape, const Placement& p, const NdSbp& sbp, DType dtype) {
  const RandomStream s = next_random_stream();  // every rank draws the stream, members or not
  return create(shape, p, sbp, dtype, [&](const Tensor& t, const Block& b) {
    fill_random(kernels::RandomKind::normal, t, s, shape, b, {});
  });
}

Tensor rand(const Shape& shape, const Placement& p, const NdSbp& sbp, DType dtype) {
  return uniform(shape, 0.0, 1.0, p, sbp, dtype);
}

Tensor uniform(const Shape& shape, double low, double high, const Placement& p, const NdSbp& sbp, DType dtype) {
  const RandomStream s = next_random_stream();
  return create(shape, p, sbp, dtype, [&](const Tensor& t, const Block& b) {
    fill_random(kernels::RandomKind::uniform, t, s, shape, b, {.low = low, .high = high});
  });
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, const Placement& p, const NdSbp& sbp) {
  check_randint_range(low, high);
  const RandomStream s = next_random_stream();
  return create(shape, p, sbp, kInt64, [&](const Tensor& t, const Block& b) {
    fill_random(kernels::RandomKind::randint, t, s, shape, b, {.int_low = low, .int_high = high});
  });
}

Tensor full(const Shape& shape, double value, const Placement& p, const NdSbp& sbp, DType dtype) {
  return create(shape, p, sbp, dtype, [&](const Tensor& t, const Block&) { kernels::kernels_for(t).fill(t, value); });
}

Tensor zeros(const Shape& shape, const Placement& p, const NdSbp& sbp, DType dtype) {
  return create(shape, p, sbp, dtype, [](const Tensor&, const Block&) {});
}

Tensor ones(const Shape& shape, const Placement& p, const NdSbp& sbp, DType dtype) {
  return full(shape, 1.0, p, sbp, dtype);
}

namespace {

// A 64-bit digest of a tensor's dtype, shape and values (row-major), for telling apart values
// that should be equal; four independent lanes of multiply-rotate over 8-byte words.
uint64_t digest(const Tensor& t) {
  const Tensor host = contiguous(kernels::copy_to_device(t, kCPU));
  uint64_t lane[4] = {0x9e3779b97f4a7c15ull ^ uint64_t(t.dtype()), 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull,
                      0x2545f4914f6cdd1dull};
  for (int64_t e : host.shape()) lane[1] = (lane[1] ^ uint64_t(e)) * 0x9e3779b97f4a7c15ull;
  const auto* bytes = static_cast<const unsigned char*>(host.raw_data());
  const size_t n = size_t(host.numel()) * itemsize(host.dtype());
  auto step = [](uint64_t h, uint64_t w) { return std::rotl((h ^ w) * 0x9e3779b97f4a7c15ull, 29); };
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, bytes + i + 8 * k, 8);
      lane[k] = step(lane[k], w);
    }
  for (; i < n; ++i) lane[0] = step(lane[0], bytes[i]);
  return step(step(step(lane[0], lane[1]), lane[2]), lane[3]) ^ n;
}

// from_full's promise, checked: every member passed the same whole value. A value read from a
// per-rank file or drawn by an unseeded generator would otherwise give each rank its block of a
// different whole, mixed without a word. Each member's digest of its value is all-gathered among
// the placement's members (8 bytes each, against a copy of the block); where they differ, every
// member throws the same error, naming the ranks that passed rank `first`'s value and those that did not.
void check_members_agree(const Tensor& value, const Placement& p) {
  const std::vector<int>& ranks = p.ranks();
  if (ranks.size() < 2 || !p.contains(dist::world_rank())) return;
  const int64_t n = int64_t(ranks.size());
  Tensor mine = Tensor::uninitialized({1}, kInt64), all = Tensor::uninitialized({n}, kInt64);
  *mine.data<int64_t>() = int64_t(digest(value));
  dist::group(ranks).all_gather_v(mine, all, std::vector<int64_t>(size_t(n), 1));
  const int64_t* d = all.data<int64_t>();
  std::vector<int> same, other;
  for (int64_t i = 0; i < n; ++i) (d[i] == d[0] ? same : other).push_back(ranks[size_t(i)]);
  if (other.empty()) return;
  auto list = [](const std::vector<int>& v) {
    std::ostringstream o;
    for (size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
    return o.str();
  };
  GLOBE_FAIL("[from_full] the ranks of ", p.to_string(), " passed different whole values of shape ",
             shape_str(value.shape()), " (", dtype_name(value.dtype()), "): rank", same.size() > 1 ? "s " : " ",
             list(same), " one value, rank", other.size() > 1 ? "s " : " ", list(other),
             " another. from_full needs the same whole value on every rank (each keeps its block of it): seed ",
             "the generator that drew it alike on every rank, or read the same file; to assemble a value from ",
             "each rank's own piece, use local.to_global(placement, sbp)");
}

}  // namespace

Tensor from_full(const Tensor& value, const Placement& p, const NdSbp& sbp) {
  GLOBE_CHECK(!value.is_global(), "[from_full] expects a local tensor holding the whole value");
  check_members_agree(value, p);
  return create(value.shape(), p, sbp, value.dtype(), [&](const Tensor& t, const Block& b) {
    Tensor view = value;
    for (size_t d = 0; d < b.start.size(); ++d) view = narrow(view, int64_t(d), b.start[d], b.shape[d]);
    kernels::device_copy(t, kernels::copy_to_device(view, t.device()));
  });
}

Tensor arange(int64_t n, const Placement& p, const NdSbp& sbp, DType dtype) {
  return create({n}, p, sbp, dtype, [&](const Tensor& t, const Block& b) {
    const Tensor values = globe::arange(double(b.start[0]), double(b.start[0] + b.shape[0]), 1.0, dtype);
    kernels::device_copy(t, kernels::copy_to_device(values, t.device()));
  });
}

// ---- lent to the layers below (hooks.h) ------------------------------------------------------

Device detail::shard_device(const Tensor& t) { return t.placement().local_device(); }

std::string detail::describe_layout(const Tensor& t) {
  const GlobalMeta& m = *t.impl().global;
  return m.placement.to_string() + ", sbp=" + m.sbp.to_string();
}

// Collective: every rank gets the whole value.
Tensor detail::whole_value(const Tensor& t) {
  Tensor all = box(t, Placement::all(t.placement().device()), replicated(1));
  return shard_of(all);
}

Tensor detail::fill_like_global(const Tensor& t, const std::function<void(const Tensor&, const Shape&)>& fill) {
  return create(t.shape(), t.placement(), partial_to_broadcast(t.sbp()), t.dtype(),
                [&](const Tensor& shard, const Block& b) { fill(shard, b.start); });
}

// Zeros keep a partial_sum layout (zeros sum to zero); any other value is broadcast.
Tensor detail::full_like_global(const Tensor& t, double value) {
  return full(t.shape(), value, t.placement(), value == 0.0 ? t.sbp() : partial_to_broadcast(t.sbp()), t.dtype());
}

// ---- visualize --------------------------------------------------------------------------------

std::string visualize(const Shape& shape, const Placement& p, const NdSbp& sbp_in, DType dtype) {
  const NdSbp sbp = normalize_sbp(sbp_in, int64_t(shape.size()), p.mesh_ndim(), "visualize");
  std::ostringstream os;
  os << "global tensor " << dtype_name(dtype) << shape_str(shape) << " on " << p.to_string() << " with sbp "
     << sbp.to_string() << "\n";
  std::string partial_axes;
  for (size_t a = 0; a < sbp.size(); ++a)
    if (sbp[a].is_partial()) partial_axes += (partial_axes.empty() ? "" : ", ") + std::to_string(a);
  std::vector<std::pair<Block, int>> seen;  // blocks named so far, with their first rank
  for (int i = 0; i < p.size(); ++i) {
    const int r = p.ranks()[i];
    const Block b = local_block(shape, p, sbp, r);
    os << "  rank " << r << " (mesh " << shape_str(p.coord_of(i)) << "): [";
    for (size_t d = 0; d < b.start.size(); ++d) os << (d ? ", " : "") << b.start[d] << ":" << b.start[d] + b.shape[d];
    os << "]";
    if (!partial_axes.empty()) os << " partial sum over mesh axis " << partial_axes;
    const auto same = std::find_if(seen.begin(), seen.end(), [&](const auto& s) {
      return s.first.start == b.start && s.first.shape == b.shape;
    });
    if (same != seen.end() && partial_axes.empty()) os << ", the same block as rank " << same->second;
    else if (same == seen.end()) seen.emplace_back(b, r);
    os << "\n";
  }
  return os.str();
}

std::string visualize(const Tensor& t) {
  const GlobalMeta& m = meta_of(t, "visualize");
  return visualize(t.shape(), m.placement, m.sbp, t.dtype());
}

}  // namespace globe
