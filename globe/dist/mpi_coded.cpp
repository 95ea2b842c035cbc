// The MPI communicator's fingerprints (fingerprint.h, docs/design.md §9): small collectives carry
// their fingerprint's code inside their data (one collective, a copy each way); larger ones reduce
// it beside them on a context of its own (a side check). Disagreeing fingerprints end in diverged(),
// where the members compare their op histories.
#include <cstring>

#include "globe/dist/fingerprint.h"
#include "globe/dist/mpi_communicator.h"
#include "globe/dist/mpi_internal.h"
#include "globe/dist/runtime.h"

namespace globe::dist {

using namespace mpi;

char* MpiCommunicator::scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

MpiCommunicator::Side MpiCommunicator::start_side(bool on) {
  Side side;
  if (!on) return side;
  side.fp = collective_fingerprint(seq_);
  side.code.resize(size_t(sum_code_len(kFloat64, size())));
  write_sum_code(side.fp, kFloat64, size(), side.code.data());
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, side.code.data(), int(side.code.size()), MPI_DOUBLE, MPI_SUM, fp_comm_,
                           &side.req),
            "fingerprint");
  return side;
}

void MpiCommunicator::finish_side(Side& side, const char* op, bool collective_pending, uint64_t seq) {
  if (side.code.empty()) return;
  wait(side.req, op, seq);
  const bool agrees = sum_code_agrees(side.fp, kFloat64, size(), side.code.data());
  side.code.clear();
  if (!agrees) diverged(op, collective_pending, seq);
}

void MpiCommunicator::diverged(const char* op, bool pending, uint64_t seq) {
  static const OpHistory none("");
  const OpHistory* h = current_history();
  const std::vector<char> mine = (h ? h : &none)->serialize();
  const RollCall call = watch_.roll_call(kDivergeTag, mine, grace_from_now());
  // Abandoned: sends to members that did not answer, or the collective itself when its side check
  // failed first. MPI could not finalise with them pending.
  if (!call.missing.empty() || pending) mark_broken("a collective of ranks that diverged was abandoned");
  const std::vector<int>& ranks = watch_.world_ranks();
  std::string diff, others;  // the first member that differs in full, the others by rank
  for (int r = 0; r < size(); ++r) {
    if (r == rank_ || call.heard[r].empty() || call.heard[r] == mine) continue;
    if (diff.empty()) diff = "at " + OpHistory::first_difference(mine, ranks[rank_], call.heard[r], ranks[r]);
    else others += (others.empty() ? "" : ", ") + std::to_string(ranks[r]);
  }
  if (!others.empty()) diff += "; ranks [" + others + "] differ from this rank too";
  if (diff.empty())
    diff = "in their collectives: the ranks that answered agree on their history of global ops, so a rank issued "
           "a collective (or a collective of another group) the others did not";
  GLOBE_FAIL("[consistency] ranks diverged ", diff, call.missing.empty() ? "" : "; ranks [" + call.missing + "] did not say",
             " (seen by the fingerprint of ", op, " #", seq ? seq : seq_, " on ranks ", watch_.members(),
             "; GLOBE_CHECK_CONSISTENCY=1 also compares shapes and layouts before each op)");
}

void MpiCommunicator::all_gather_coded(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  const DType dt = out.dtype();
  const uint32_t fp = collective_fingerprint(seq_);
  const size_t item = itemsize(dt), p = size_t(size());
  std::vector<int64_t> coded(counts);
  for (int64_t& c : coded) ++c;  // each member's piece, then its code
  const Layout plain = layout(counts, "all_gather"), l = layout(coded, "all_gather");
  const size_t total = size_t(out.numel()) + p;
  char* buf = scratch((total + size_t(coded[rank_])) * item);
  char* send = buf + total * item;
  std::memcpy(send, ptr(local, "all_gather"), size_t(counts[rank_]) * item);
  write_raw_code(fp, dt, send + size_t(counts[rank_]) * item);
  MPI_Request req;
  check_mpi(MPI_Iallgatherv(send, l.counts[rank_], mpi_type(dt), buf, l.counts.data(), l.displs.data(), mpi_type(dt),
                            comm_, &req),
            "all_gather");
  wait(req, "all_gather");
  for (size_t r = 0; r < p; ++r)
    if (!raw_code_agrees(fp, buf + size_t(l.displs[r] + plain.counts[r]) * item)) diverged("all_gather");
  char* dst = static_cast<char*>(ptr(out, "all_gather"));
  for (size_t r = 0; r < p; ++r)
    std::memcpy(dst + size_t(plain.displs[r]) * item, buf + size_t(l.displs[r]) * item, size_t(plain.counts[r]) * item);
}

void MpiCommunicator::reduce_scatter_coded(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  const DType dt = in.dtype();
  GLOBE_CHECK(out.dtype() == dt, "[reduce_scatter] dtypes differ: ", describe(in), " into ", describe(out));
  const uint32_t fp = collective_fingerprint(seq_);
  const size_t item = itemsize(dt), p = size_t(size()), len = size_t(sum_code_len(dt, size()));
  std::vector<int64_t> coded(counts);
  for (int64_t& c : coded) c += int64_t(len);  // each member's chunk, then the code
  const Layout plain = layout(counts, "reduce_scatter"), l = layout(coded, "reduce_scatter");
  const size_t packed_n = size_t(in.numel()) + p * len;
  char* buf = scratch((packed_n + size_t(coded[rank_])) * item);
  char* mine = buf + packed_n * item;
  const char* src = static_cast<const char*>(ptr(in, "reduce_scatter"));
  for (size_t r = 0; r < p; ++r) {
    char* chunk = buf + size_t(l.displs[r]) * item;
    std::memcpy(chunk, src + size_t(plain.displs[r]) * item, size_t(counts[r]) * item);
    write_sum_code(fp, dt, size(), chunk + size_t(counts[r]) * item);
  }
  MPI_Request req;
  check_mpi(MPI_Ireduce_scatter(buf, mine, l.counts.data(), mpi_type(dt), mpi_sum(dt), comm_, &req), "reduce_scatter");
  wait(req, "reduce_scatter");
  if (!sum_code_agrees(fp, dt, size(), mine + size_t(counts[rank_]) * item)) diverged("reduce_scatter");
  std::memcpy(ptr(out, "reduce_scatter"), mine, size_t(counts[rank_]) * item);
}

void MpiCommunicator::all_to_all_coded(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                                       const std::vector<int64_t>& recv_counts) {
  const DType dt = send.dtype();
  const uint32_t fp = collective_fingerprint(seq_);
  const size_t item = itemsize(dt), p = size_t(size());
  std::vector<int64_t> sc(send_counts), rc(recv_counts);
  for (size_t r = 0; r < p; ++r) ++sc[r], ++rc[r];  // each chunk, then its code
  const Layout s_plain = layout(send_counts, "all_to_all"), r_plain = layout(recv_counts, "all_to_all");
  const Layout s = layout(sc, "all_to_all"), r = layout(rc, "all_to_all");
  const size_t send_n = size_t(send.numel()) + p, recv_n = size_t(recv.numel()) + p;
  char* sbuf = scratch((send_n + recv_n) * item);
  char* rbuf = sbuf + send_n * item;
  const char* src = static_cast<const char*>(ptr(send, "all_to_all"));
  for (size_t k = 0; k < p; ++k) {
    char* chunk = sbuf + size_t(s.displs[k]) * item;
    std::memcpy(chunk, src + size_t(s_plain.displs[k]) * item, size_t(send_counts[k]) * item);
    write_raw_code(fp, dt, chunk + size_t(send_counts[k]) * item);
  }
  MPI_Request req;
  check_mpi(MPI_Ialltoallv(sbuf, s.counts.data(), s.displs.data(), mpi_type(dt), rbuf, r.counts.data(),
                           r.displs.data(), mpi_type(recv.dtype()), comm_, &req),
            "all_to_all");
  wait(req, "all_to_all");
  for (size_t k = 0; k < p; ++k)
    if (!raw_code_agrees(fp, rbuf + size_t(r.displs[k] + r_plain.counts[k]) * item)) diverged("all_to_all");
  char* dst = static_cast<char*>(ptr(recv, "all_to_all"));
  for (size_t k = 0; k < p; ++k)
    std::memcpy(dst + size_t(r_plain.displs[k]) * item, rbuf + size_t(r.displs[k]) * item,
                size_t(recv_counts[k]) * item);
}


}  // namespace globe::dist
