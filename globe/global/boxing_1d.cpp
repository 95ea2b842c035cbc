#include "globe/global/boxing_1d.h"

#include <functional>

#include "globe/core/deterministic.h"
#include "globe/kernels/device_kernels.h"
#include "globe/kernels/tree_sum.h"
#include "globe/ops/ops.h"

namespace globe::detail {

namespace {

// Every buffer below is on the device of the shard it comes from; copies go through that
// device's kernel table.
void copy_into(const Tensor& dst, const Tensor& src) { kernels::device_copy(dst, src); }

// Buffers below that are written in full are allocated without zero-filling (a 16 MiB memset
// costs ~1.5 ms, a third of a 16 MiB transfer).
Tensor copy_of(const Tensor& t) {
  Tensor out = Tensor::uninitialized(t.shape(), t.dtype(), t.device());
  copy_into(out, t);
  return out;
}

// Elements of each of the p pieces of `block` split along d.
std::vector<int64_t> piece_counts(const Shape& block, int64_t d, int p) {
  const int64_t n = block[d];
  const int64_t rest = n == 0 ? 0 : numel_of(block) / n;
  std::vector<int64_t> c(p);
  for (int r = 0; r < p; ++r) c[r] = split_range(n, p, r).length * rest;
  return c;
}

// Shapes of the pieces of `shape` split along d into p parts.
Shape piece_shape(Shape shape, int64_t d, int p, int r) {
  shape[d] = split_range(shape[d], p, r).length;
  return shape;
}

// Whether pieces along d are already consecutive in a contiguous tensor of `shape`.
bool pieces_contiguous(const Shape& shape, int64_t d) {
  for (int64_t i = 0; i < d; ++i)
    if (shape[i] != 1) return false;
  return true;
}

// `t` (contiguous or not) as one buffer holding its p pieces along d one after another.
Tensor pack(const Tensor& t, int64_t d, int p) {
  if (t.is_contiguous() && pieces_contiguous(t.shape(), d)) return t;
  Tensor buf = Tensor::uninitialized({t.numel()}, t.dtype(), t.device());
  int64_t at = 0;
  for (int r = 0; r < p; ++r) {
    Range rg = split_range(t.shape()[d], p, r);
    Tensor piece = Tensor::narrow_view(t, d, rg.start, rg.length);
    Tensor dst = Tensor::view_of(buf, piece.shape(), contiguous_strides(piece.shape()), at);
    copy_into(dst, piece);
    at += piece.numel();
  }
  return buf;
}

// The inverse of pack: a `shape` tensor from a buffer of pieces along d, piece r shaped
// piece_shape(r).
Tensor unpack(const Tensor& buf, const Shape& shape, int64_t d, int p,
              const std::function<Shape(int)>& piece_shape_of) {
  if (pieces_contiguous(shape, d)) return Tensor::view_of(buf, shape, contiguous_strides(shape), buf.offset());
  Tensor out = Tensor::uninitialized(shape, buf.dtype(), buf.device());
  int64_t at = 0, pos = 0;
  for (int r = 0; r < p; ++r) {
    const Shape ps = piece_shape_of(r);
    Tensor src = Tensor::view_of(buf, ps, contiguous_strides(ps), buf.offset() + at);
    copy_into(Tensor::narrow_view(out, d, pos, ps[d]), src);
    at += numel_of(ps);
    pos += ps[d];
  }
  return out;
}

// S(d) -> B, started: the gather lands in one buffer of the pieces, unpacked once it arrived.
std::function<Tensor()> start_gather_split(const Tensor& local, const Shape& block, dist::Communicator& comm,
                                           int64_t d) {
  const int p = comm.size();
  Tensor buf = Tensor::uninitialized({numel_of(block)}, local.dtype(), local.device());
  dist::Request req = comm.start_all_gather_v(kernels::device_dense(local), buf, piece_counts(block, d, p));
  return [req, buf, block, d, p]() mutable {
    req.wait();
    return unpack(buf, block, d, p, [&](int r) { return piece_shape(block, d, p, r); });
  };
}

// Element counts of n elements cut into p balanced flat pieces.
std::vector<int64_t> balanced_counts(int64_t n, int p) {
  std::vector<int64_t> counts(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) counts[size_t(r)] = split_range(n, p, r).length;
  return counts;
}

// Deterministic mode's reduce-scatter (core/deterministic.h): member q receives every member's
// piece q (counts[q] elements of the flat `packed`, pieces in member order) and adds them in the
// tree of kernels/tree_order.h over member index, member r's partial being the r-th subtree of the sum. The
// bytes of a reduce-scatter; the adds on the member that owns the piece.
Tensor tree_reduce_scatter(const Tensor& packed, const std::vector<int64_t>& counts, dist::Communicator& comm) {
  const int p = comm.size();
  const int64_t mine = counts[size_t(comm.rank())];
  Tensor recv = Tensor::uninitialized({p * mine}, packed.dtype(), packed.device());
  comm.all_to_all_v(kernels::device_dense(packed), counts, recv, std::vector<int64_t>(size_t(p), mine));
  std::vector<Tensor> parts;
  for (int r = 0; r < p; ++r) parts.push_back(Tensor::view_of(recv, {mine}, {1}, r * mine));
  return kernels::tree_sum(parts);
}

Tensor reduce_scatter_split(const Tensor& local, const Shape& block, dist::Communicator& comm, int64_t d) {
  const int p = comm.size();
  // MPI never writes a (non-MPI_IN_PLACE) send buffer, so a contiguous `local` is sent as is.
  Tensor packed = pack(local, d, p);
  const Shape mine = piece_shape(block, d, p, comm.rank());
  if (deterministic()) {
    const Tensor sum = tree_reduce_scatter(packed, piece_counts(block, d, p), comm);
    return Tensor::view_of(sum, mine, contiguous_strides(mine), sum.offset());
  }
  Tensor out = Tensor::uninitialized(mine, local.dtype(), local.device());
  comm.reduce_scatter_v(packed, out, piece_counts(block, d, p));
  return out;
}

Tensor slice_split(const Tensor& local, const Shape& block, int p, int me, int64_t d) {
  Range r = split_range(block[d], p, me);
  return copy_of(Tensor::narrow_view(local, d, r.start, r.length));
}

// Above this many bytes S(i) -> S(j) moves each piece once (exchange); below, one fingerprinted
// all-to-all of packed buffers costs less than p point-to-point messages.
constexpr int64_t kExchangeMinBytes = int64_t(64) << 10;

Tensor all_to_all(const Tensor& local, const Shape& block, dist::Communicator& comm, int64_t from_d,
                  int64_t to_d) {
  const int p = comm.size(), me = comm.rank();
  const Shape target_block = piece_shape(block, to_d, p, me);
  if (pieces_contiguous(target_block, from_d) && numel_of(block) * int64_t(itemsize(local.dtype())) >= kExchangeMinBytes) {
    // The pieces arriving from each member are consecutive in the output: they are received in
    // place; the piece this member keeps is copied straight from its shard; only the pieces sent
    // are packed, one buffer each (a view when already contiguous).
    Tensor out = Tensor::uninitialized(target_block, local.dtype(), local.device());
    std::vector<Tensor> send(static_cast<size_t>(p)), recv(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      const Range from = split_range(block[from_d], p, r), to = split_range(local.shape()[to_d], p, r);
      recv[size_t(r)] = Tensor::narrow_view(out, from_d, from.start, from.length);
      const Tensor piece = Tensor::narrow_view(local, to_d, to.start, to.length);
      if (r == me) copy_into(recv[size_t(r)], piece);
      else send[size_t(r)] = piece.is_contiguous() ? piece : copy_of(piece);
    }
    comm.exchange(send, recv);
    return out;
  }
  // Send: my block (split on from_d) cut along to_d, piece r to member r.
  const Shape mine = local.shape();
  Tensor send = pack(kernels::device_dense(local), to_d, p);
  std::vector<int64_t> send_counts = piece_counts(mine, to_d, p);
  // Receive: from member s, the block [range_from(s), range_to(me)].
  Shape target = piece_shape(block, to_d, p, me);
  auto recv_shape = [&](int s) { return piece_shape(target, from_d, p, s); };
  std::vector<int64_t> recv_counts(p);
  for (int s = 0; s < p; ++s) recv_counts[s] = numel_of(recv_shape(s));
  Tensor recv = Tensor::uninitialized({numel_of(target)}, local.dtype(), local.device());
  comm.all_to_all_v(send, send_counts, recv, recv_counts);
  return unpack(recv, target, from_d, p, recv_shape);
}

// P -> B. Large blocks: reduce-scatter flat balanced chunks, then all-gather them into the
// output — the input is only read, where an in-place all-reduce needs a copy of it first (a
// 16 MiB copy is ~2 ms, a third of the whole conversion). Small blocks: one all-reduce (latency).
constexpr int64_t kScatterGatherMinBytes = int64_t(256) << 10;

Tensor reduce_to_all(const Tensor& local, const Shape& block, dist::Communicator& comm) {
  const int p = comm.size();
  const int64_t n = local.numel();
  if (deterministic()) {
    Tensor out = Tensor::uninitialized(block, local.dtype(), local.device());
    tree_all_reduce(kernels::device_dense(local), out, comm);
    return out;
  }
  if (p == 1 || n * int64_t(itemsize(local.dtype())) < kScatterGatherMinBytes) {
    Tensor out = copy_of(local);
    comm.all_reduce_sum(out);
    return out;
  }
  const std::vector<int64_t> counts = balanced_counts(n, p);
  Tensor piece = Tensor::uninitialized({counts[comm.rank()]}, local.dtype(), local.device());
  comm.reduce_scatter_v(kernels::device_dense(local), piece, counts);
  Tensor out = Tensor::uninitialized(block, local.dtype(), local.device());
  comm.all_gather_v(piece, out, counts);
  return out;
}

}  // namespace

void tree_all_reduce(const Tensor& src, const Tensor& dst, dist::Communicator& comm) {
  const std::vector<int64_t> counts = balanced_counts(src.numel(), comm.size());
  const Tensor piece = tree_reduce_scatter(src, counts, comm);
  comm.all_gather_v(piece, dst, counts);
}

Started start_box_axis(const Tensor& local, const Shape& block, dist::Communicator& comm, const Sbp& from,
                       const Sbp& to) {
  if (from.is_split() && to.is_broadcast()) return {Tensor(), start_gather_split(local, block, comm, from.dim)};
  return {box_axis(local, block, comm, from, to), nullptr};
}

Tensor box_axis(const Tensor& local, const Shape& block, dist::Communicator& comm, const Sbp& from,
                const Sbp& to) {
  if (from == to) return local;
  const int p = comm.size(), me = comm.rank();
  using K = Sbp::Kind;
  switch (from.kind) {
    case K::split:
      if (to.is_broadcast()) return start_gather_split(local, block, comm, from.dim)();
      if (to.is_split()) return all_to_all(local, block, comm, from.dim, to.dim);
      {  // S(i) -> P: my shard in zeros of the full block
        Tensor out = Tensor::empty(block, local.dtype(), local.device());
        copy_into(Tensor::narrow_view(out, from.dim, split_range(block[from.dim], p, me).start, local.shape()[from.dim]),
                  local);
        return out;
      }
    case K::broadcast:
      if (to.is_split()) return slice_split(local, block, p, me, to.dim);
      return me == 0 ? copy_of(local) : Tensor::empty(block, local.dtype(), local.device());  // B -> P
    case K::partial_sum:
      if (to.is_split()) return reduce_scatter_split(local, block, comm, to.dim);
      return reduce_to_all(local, block, comm);
  }
  GLOBE_FAIL("[boxing] unknown sbp");
}

}  // namespace globe::detail
