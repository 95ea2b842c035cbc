// The MPI communicator's plain collectives, point-to-point transfers, barrier and consistency
// checks. Large all-reduces and reduce-scatters: mpi_ring.cpp; fingerprints: mpi_stamps.cpp.
#include "globe/dist/mpi_communicator.h"

#include <algorithm>
#include <cstring>

#include "globe/dist/fingerprint.h"
#include "globe/dist/mpi_internal.h"
#include "globe/dist/runtime.h"

namespace globe::dist {

namespace {

// MPI's user-op signature: inout[i] = in[i] + inout[i] over a 16-bit float type, summed in float32.
template <class T>
void reduced_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = T(float(a[i]) + float(b[i]));
}

template <class T>
MPI_Op reduced_sum_op() {
  static MPI_Op op = [] {
    MPI_Op made;
    MPI_Op_create(&reduced_sum<T>, /*commute=*/1, &made);
    return made;
  }();
  return op;
}

}  // namespace

MPI_Op mpi::mpi_sum(DType t) {
  if (t == DType::bfloat16) return reduced_sum_op<bfloat16>();
  if (t == DType::float16) return reduced_sum_op<float16>();
  return MPI_SUM;
}

using namespace mpi;

namespace {

// A point-to-point transfer. A receive checks that the message filled its tensor exactly: a peer
// that sent another size is an error naming both sizes, never a silently half-filled tensor.
class MpiRequest final : public Request::Impl {
 public:
  MpiRequest(MPI_Request req, Tensor keep, int peer, bool is_recv)
      : req_(req),
        keep_(std::move(keep)),
        what_((is_recv ? "recv from rank " : "send to rank ") + std::to_string(peer)),
        peer_(peer),
        is_recv_(is_recv) {}
  ~MpiRequest() override {
    if (req_ != MPI_REQUEST_NULL) {
      // Abandoned (e.g. unwinding after an error): cancel so the buffer is not written later.
      MPI_Cancel(&req_);
      MPI_Request_free(&req_);
    }
  }
  bool test() override {
    int done = 0;
    MPI_Status status;
    if (req_ == MPI_REQUEST_NULL) return true;
    MPI_Test(&req_, &done, &status);
    if (done) check_count(status);
    return done;
  }
  void wait() override {
    if (req_ == MPI_REQUEST_NULL) return;
    MPI_Status status;
    const std::string waiting = waiting_for();
    const std::string during = waiting.empty() ? "" : " (waiting for " + waiting + ")";
    // The peer ended its program: what it sent before has arrived within the grace.
    const bool done = poll_until(req_, deadline_from_now(), &status, [&] { return left_longer_than(peer_, 1.0); });
    GLOBE_CHECK(done || !left_longer_than(peer_, 1.0), "[", what_, "] rank ", peer_, " ended its program without ",
                is_recv_ ? "sending" : "receiving", " it", during, ": the ranks' programs disagree about this transfer");
    GLOBE_CHECK(done, "[", what_, "] timed out after ", timeout_seconds(), " s: the peer never matched it", during,
                " (GLOBE_TIMEOUT sets the limit)");
    check_count(status);
  }

 private:
  void check_count(const MPI_Status& status) {
    if (!is_recv_) return;
    int count = 0;
    MPI_Get_count(&status, mpi_type(keep_.dtype()), &count);
    GLOBE_CHECK(count == keep_.numel(), "[", what_, "] the peer sent ", count, " elements where ", keep_.numel(),
                " (", describe(keep_), ") were expected: the ranks disagree about the tensor's shape");
  }

  MPI_Request req_;
  Tensor keep_;
  std::string what_;
  int peer_;  // world rank
  bool is_recv_;
};

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, std::vector<int> ranks)
    : comm_(comm), watch_(comm, std::move(ranks)), rank_(watch_.rank()) {
  check_mpi(MPI_Comm_dup(comm_, &ring_comm_), "comm_dup");
  check_mpi(MPI_Comm_dup(comm_, &fp_comm_), "comm_dup");
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  MPI_Comm_free(&ring_comm_);
  MPI_Comm_free(&fp_comm_);
  if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
}

void MpiCommunicator::wait(MPI_Request& req, const char* op, uint64_t seq) {
  watch_.wait(
      [&] {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        return done != 0;
      },
      op, seq ? seq : seq_, {});
}

void MpiCommunicator::wait_both(MPI_Request (&reqs)[2], const char* op, uint64_t seq) {
  int done = 0;  // both already there (a small exchange): one test, one pass of MPI's progress
  MPI_Testall(2, reqs, &done, MPI_STATUSES_IGNORE);
  if (done) return;
  try {
    wait(reqs[0], op, seq);
    wait(reqs[1], op, seq);
  } catch (...) {
    // Timed out: cancel what is still pending, so MPI never writes into the buffers the caller
    // frees while the error unwinds.
    cancel_pending(reqs, 2);
    throw;
  }
}

// Open MPI's MPI_Iallgatherv beside its stamps. test() moves it on; wait() finishes the stamps
// first: with a rank in another collective the gather never ends. Both
// finish under the op history it started under, which a divergence names, wherever they run.
class MpiCommunicator::AllGather final : public Request::Impl {
 public:
  AllGather(MpiCommunicator& c, const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts)
      : c_(c), local_(local), out_(out), seq_(c.seq_), history_(current_history()), layout_(layout(counts, "all_gather")) {
    c.start_side(side_, fingerprints(), "all_gather");
    check_mpi(MPI_Iallgatherv(ptr(local, "all_gather"), layout_.counts[size_t(c.rank_)], mpi_type(local.dtype()),
                              ptr(out, "all_gather"), layout_.counts.data(), layout_.displs.data(), mpi_type(out.dtype()),
                              c.comm_, &req_),
              "all_gather");
  }
  ~AllGather() override {
    // Abandoned while unwinding an error: a collective cannot be cancelled, so MPI must not be
    // finalised with one pending.
    if (!done_) mark_broken("an all-gather in flight was abandoned");
  }
  bool test() override {
    if (done_) return true;
    int data = 0;
    MPI_Test(&req_, &data, MPI_STATUS_IGNORE);
    if (!side_.test() || !data) return false;
    const StampScope scope(history_);
    side_.finish(false);
    return done_ = true;
  }
  void wait() override {
    if (done_) return;
    const StampScope scope(history_);
    side_.finish(true);
    c_.wait(req_, "all_gather", seq_);
    done_ = true;
  }

 private:
  MpiCommunicator& c_;
  Tensor local_, out_;  // kept alive while MPI reads and writes them
  const uint64_t seq_;
  const OpHistory* history_;
  Layout layout_;
  Stamps side_;
  MPI_Request req_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

void MpiCommunicator::all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  start_all_gather_v(local, out, counts).wait();
}

Request MpiCommunicator::start_all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  ++seq_;
  GLOBE_CHECK(int(counts.size()) == size() && local.numel() == counts[rank_], "[all_gather] counts do not ",
              "match: local ", describe(local), " for ", counts.size(), " members");
  // A small one travels in its stamps, done at once.
  if (fingerprints() && out.numel() * int64_t(itemsize(out.dtype())) <= kStampedMaxBytes) {
    all_gather_stamped(local, out, counts);
    return Request();
  }
  return Request(std::make_shared<AllGather>(*this, local, out, counts));
}

void MpiCommunicator::reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  ++seq_;
  GLOBE_CHECK(int(counts.size()) == size() && out.numel() == counts[rank_], "[reduce_scatter] counts do not ",
              "match: out ", describe(out), " for ", counts.size(), " members");
  const int64_t bytes = in.numel() * int64_t(itemsize(in.dtype()));
  if (fingerprints() && bytes <= kStampedMaxBytes) return reduce_scatter_stamped(in, out, counts);
  Stamps side;
  start_side(side, fingerprints(), "reduce_scatter");
  if (bytes >= kRingMinBytes) {
    ring_reduce_scatter(in, out, counts);
  } else {
    Layout l = layout(counts, "reduce_scatter");
    MPI_Request req;
    check_mpi(MPI_Ireduce_scatter(ptr(in, "reduce_scatter"), ptr(out, "reduce_scatter"), l.counts.data(),
                                  mpi_type(in.dtype()), mpi_sum(in.dtype()), comm_, &req),
              "reduce_scatter");
    side.finish(true);
    wait(req, "reduce_scatter");
  }
  side.finish(false);  // the ring's, or nothing left
}

void MpiCommunicator::all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts,
                                   const Tensor& recv, const std::vector<int64_t>& recv_counts) {
  ++seq_;
  const int64_t bytes = std::max(send.numel(), recv.numel()) * int64_t(itemsize(send.dtype()));
  if (fingerprints() && bytes <= kStampedMaxBytes) return all_to_all_stamped(send, send_counts, recv, recv_counts);
  Stamps side;
  start_side(side, fingerprints(), "all_to_all");
  Layout s = layout(send_counts, "all_to_all"), r = layout(recv_counts, "all_to_all");
  MPI_Request req;
  check_mpi(MPI_Ialltoallv(ptr(send, "all_to_all"), s.counts.data(), s.displs.data(), mpi_type(send.dtype()),
                           ptr(recv, "all_to_all"), r.counts.data(), r.displs.data(), mpi_type(recv.dtype()),
                           comm_, &req),
            "all_to_all");
  side.finish(true);  // first: with a rank in another collective this one never ends
  wait(req, "all_to_all");
}

// Point-to-point on the ring communicator, tagged by the collective's number (as the ring
// all-reduce), beside its stamps; each receive checks its count.
void MpiCommunicator::exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) {
  const int p = size();
  check_exchange_pieces(send, recv, p, rank_);
  ++seq_;
  Stamps side;
  start_side(side, fingerprints(), "exchange");
  const int tag = kExchangeTagBase + int(seq_ % kRingTags);
  std::vector<MPI_Request> reqs(size_t(2 * p), MPI_REQUEST_NULL);
  for (int s = 0; s < p; ++s) {
    if (s == rank_) continue;
    const Tensor& r = recv[size_t(s)];
    check_mpi(MPI_Irecv(ptr(r, "exchange"), as_count(r.numel(), "exchange"), mpi_type(r.dtype()), s, tag, ring_comm_,
                        &reqs[size_t(2 * s)]),
              "exchange");
  }
  for (int k = 1; k < p; ++k) {  // rank+1 first, so that not every member sends to member 0 first
    const int s = (rank_ + k) % p;
    const Tensor& t = send[size_t(s)];
    check_mpi(MPI_Isend(ptr(t, "exchange"), as_count(t.numel(), "exchange"), mpi_type(t.dtype()), s, tag, ring_comm_,
                        &reqs[size_t(2 * s + 1)]),
              "exchange");
  }
  // A piece of the wrong size is reported after the exchange and its stamps completed, so
  // that every member leaves the collective and the communicator stays usable.
  std::string wrong;
  try {
    for (int s = 0; s < p; ++s) {
      if (s == rank_) continue;
      MPI_Status status;  // a receive that never comes is cancelled below, not left broken
      if (!poll_until(reqs[size_t(2 * s)], deadline_from_now(), &status,
                      [&] { return !watch_.member_gone("exchange", seq_).empty(); })) {
        if (std::string gone = watch_.member_gone("exchange", seq_); !gone.empty()) GLOBE_FAIL(gone);
        GLOBE_FAIL(watch_.timed_out("exchange", seq_));
      }
      int count = 0;
      MPI_Get_count(&status, mpi_type(recv[size_t(s)].dtype()), &count);
      if (wrong.empty() && (count != recv[size_t(s)].numel() || status.MPI_ERROR == MPI_ERR_TRUNCATE))
        wrong = "[exchange] rank " + std::to_string(world_ranks()[size_t(s)]) + " sent " + std::to_string(count) + " elements where " +
                std::to_string(recv[size_t(s)].numel()) +
                " were expected: the ranks disagree about the pieces' shapes";
    }
    for (int s = 0; s < p; ++s)
      if (s != rank_) wait(reqs[size_t(2 * s + 1)], "exchange");
  } catch (...) {
    cancel_pending(reqs.data(), reqs.size());
    throw;
  }
  side.finish(false);
  GLOBE_CHECK(wrong.empty(), wrong);
}

void MpiCommunicator::broadcast(const Tensor& t, int root) {
  ++seq_;
  Stamps side;
  start_side(side, fingerprints(), "broadcast");
  MPI_Request req;
  check_mpi(MPI_Ibcast(ptr(t, "broadcast"), as_count(t.numel(), "broadcast"), mpi_type(t.dtype()), root,
                       comm_, &req),
            "broadcast");
  side.finish(true);  // first: with a rank in another collective this one never ends
  wait(req, "broadcast");
}

Request MpiCommunicator::isend(const Tensor& t, int peer, int tag) {
  MPI_Request req;
  check_mpi(MPI_Isend(ptr(t, "send"), as_count(t.numel(), "send"), mpi_type(t.dtype()), peer, tag, comm_, &req),
            "send");
  return Request(std::make_shared<MpiRequest>(req, t, world_ranks()[size_t(peer)], false));
}

Request MpiCommunicator::irecv(const Tensor& t, int peer, int tag) {
  MPI_Request req;
  check_mpi(MPI_Irecv(ptr(t, "recv"), as_count(t.numel(), "recv"), mpi_type(t.dtype()), peer, tag, comm_, &req),
            "recv");
  return Request(std::make_shared<MpiRequest>(req, t, world_ranks()[size_t(peer)], true));
}

void MpiCommunicator::barrier() {
  ++seq_;
  if (fingerprints()) {  // the stamps, from every member to every member, are a barrier
    Stamps side;
    start_side(side, true, "barrier");
    side.finish(false);
    return;
  }
  MPI_Request req;
  check_mpi(MPI_Ibarrier(comm_, &req), "barrier");
  wait(req, "barrier");
}

void MpiCommunicator::check_consistency(const std::string& what) {
  const uint64_t seq = ++check_seq_;
  // Every member sends (seq, what) to every other member and receives theirs.
  std::vector<char> mine(kCheckBytes, 0);
  std::memcpy(mine.data(), &seq, 8);
  std::memcpy(mine.data() + 8, what.data(), std::min<size_t>(what.size(), kCheckBytes - 9));
  const RollCall call = watch_.roll_call(0, mine, deadline_from_now());
  if (!call.missing.empty()) mark_broken();  // abandoned sends: MPI_Finalize would wait for the missing ranks
  GLOBE_CHECK(call.missing.empty(), "[consistency] global op #", seq, " (", what, ") on ranks ", watch_.members(),
              ": ranks [", call.missing, "] did not arrive within ", timeout_seconds(), " s");
  std::string diff;
  for (int r = 0; r < size(); ++r) {
    if (r == rank_) continue;
    uint64_t their_seq;
    std::memcpy(&their_seq, call.heard[r].data(), 8);
    std::string their_what(call.heard[r].data() + 8);
    if (their_seq != seq || their_what != what.substr(0, kCheckBytes - 9))
      diff += " rank " + std::to_string(world_ranks()[size_t(r)]) + " runs #" + std::to_string(their_seq) + " (" + their_what + ");";
  }
  GLOBE_CHECK(diff.empty(), "[consistency] ranks diverged at global op #", seq, ": this rank (",
              world_ranks()[size_t(rank_)], ") runs (", what, ") but", diff);
}

}  // namespace globe::dist