#include "globe/dist/mpi_communicator.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "globe/core/sbp.h"
#include "globe/dist/fingerprint.h"
#include "globe/dist/runtime.h"
#include "globe/kernels/elementwise.h"

namespace globe::dist {

void check_mpi(int rc, const char* op) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  GLOBE_FAIL("[", op, "] MPI error: ", std::string(text, len));
}

// Polls a request until done or `deadline`. For the first 2 ms it only yields the core between
// polls (ranks may outnumber cores); then it sleeps between polls, 20 us for 200 ms, then 200 us.
// The spinning phase is timed, not counted: MPI moves data only inside MPI_Test, and a 20 us
// sleep lasts ~100 us (timer slack), so a transfer that outlives the spinning phase is noticed
// late. With "200 polls" the phase lasted about as long as a 1 MiB transfer (~80 us), and a 1 MiB
// [0] -> [1] move took 0.085 or 0.2 ms from run to run (bench/RESULTS.md, "Boxing").
namespace {
int64_t spin_us() {
  const char* v = std::getenv("GLOBE_SPIN_US");
  return v ? std::atoll(v) : 50;
}
}  // namespace
static const int64_t kSpinUs = spin_us();

bool poll_until(MPI_Request& req, std::chrono::steady_clock::time_point deadline, MPI_Status* status,
                const std::function<bool()>& give_up) {
  using namespace std::chrono;
  const auto start = steady_clock::now();
  int done = 0;
  for (;;) {
    MPI_Test(&req, &done, status ? status : MPI_STATUS_IGNORE);
    if (done) return true;
    const auto now = steady_clock::now();
    if (now > deadline) return false;
    if (now - start < microseconds(kSpinUs)) {
      continue;  // MPI_Test alone: a yield is a system call, longer than a small collective
    } else if (now - start < milliseconds(2)) {
      sched_yield();
    } else {
      check_failure_notice();
      if (give_up && give_up()) return false;
      std::this_thread::sleep_for(microseconds(now - start < milliseconds(200) ? 20 : 200));
    }
  }
}

std::chrono::steady_clock::time_point deadline_from_now() {
  return std::chrono::steady_clock::now() +
         std::chrono::milliseconds(int64_t(timeout_seconds() * 1000.0));
}

RollCall roll_call(MPI_Comm comm, const std::vector<int>& peers, const std::vector<int>& world, int me, int tag,
                   const std::vector<char>& mine, std::chrono::steady_clock::time_point deadline) {
  const int p = int(peers.size()), n = int(mine.size());
  RollCall call{std::vector<std::vector<char>>(p), ""};
  std::vector<MPI_Request> sends, recvs(p, MPI_REQUEST_NULL);
  for (int r = 0; r < p; ++r) {
    if (r == me) continue;
    call.heard[r].assign(n, 0);
    MPI_Request s;
    MPI_Isend(mine.data(), n, MPI_CHAR, peers[r], tag, comm, &s);
    sends.push_back(s);
    MPI_Irecv(call.heard[r].data(), n, MPI_CHAR, peers[r], tag, comm, &recvs[r]);
  }
  for (int r = 0; r < p; ++r) {
    // A member that ended its program sent what it ever will within the grace.
    if (r == me || poll_until(recvs[r], deadline, nullptr, [&] { return left_longer_than(world[r], 1.0); })) continue;
    call.missing += (call.missing.empty() ? "" : ", ") + std::to_string(world[r]);
    if (left_longer_than(world[r], 1.0)) call.missing += " (it ended its program)";
    call.heard[r].clear();
    MPI_Cancel(&recvs[r]);
    MPI_Request_free(&recvs[r]);
  }
  for (MPI_Request& s : sends) {
    if (call.missing.empty()) MPI_Wait(&s, MPI_STATUS_IGNORE);
    else MPI_Request_free(&s);  // a member that never arrives never receives; let MPI drop it
  }
  return call;
}

namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int64: return MPI_INT64_T;
  }
  return MPI_BYTE;
}

int as_count(int64_t n, const char* op) {
  GLOBE_CHECK(n >= 0 && n <= INT_MAX, "[", op, "] ", n, " elements exceed MPI's int count");
  return int(n);
}

void* ptr(const Tensor& t, const char* op) {
  GLOBE_CHECK(!t.is_global() && t.is_contiguous(), "[", op, "] needs a contiguous local tensor, got ",
              describe(t));
  return t.raw_data();
}

// Counts and displacements in MPI's int form.
struct Layout {
  std::vector<int> counts, displs;
};
Layout layout(const std::vector<int64_t>& counts, const char* op) {
  Layout l;
  int64_t at = 0;
  for (int64_t c : counts) {
    l.counts.push_back(as_count(c, op));
    l.displs.push_back(as_count(at, op));
    at += c;
  }
  return l;
}

// Cancels and frees the point-to-point requests still pending (a wait failed: MPI must not write
// into buffers the caller frees while the error unwinds).
void cancel_pending(MPI_Request* reqs, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (reqs[i] != MPI_REQUEST_NULL) {
      MPI_Cancel(&reqs[i]);
      MPI_Request_free(&reqs[i]);
    }
}

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

constexpr int kCheckBytes = 256;  // seq (8) + text
constexpr int kRingTag = 0x51;
constexpr int kStuckTag = 0x57;  // on check_comm_: "I timed out in collective #seq"
constexpr int kDivergeTag = 0x5d;  // on check_comm_: "my op history", after fingerprints disagreed
// Up to this many bytes a collective carries its fingerprint inside its data (copying the data
// costs less than a second, concurrent collective); above, a side check reduces it beside.
constexpr int64_t kCodedMaxBytes = 64 << 10;
constexpr int64_t kRingMinBytes = 256 << 10;  // below this Open MPI's all-reduce is as fast
// Point-to-point collectives on ring_comm_ tag their messages by sequence number, in two ranges:
// ring all-reduce steps and exchanges.
constexpr int kRingTags = 8192;  // MPI_TAG_UB is at least 32767
constexpr int kRingTagBase = 1024, kExchangeTagBase = kRingTagBase + kRingTags;

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, std::vector<int> ranks) : comm_(comm), ranks_(std::move(ranks)) {
  MPI_Comm_rank(comm_, &rank_);
  for (int i = 0; i < size(); ++i) group_ranks_.push_back(i);
  check_mpi(MPI_Comm_dup(comm_, &check_comm_), "comm_dup");
  check_mpi(MPI_Comm_dup(comm_, &ring_comm_), "comm_dup");
  check_mpi(MPI_Comm_dup(comm_, &fp_comm_), "comm_dup");
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  MPI_Comm_free(&check_comm_);
  MPI_Comm_free(&ring_comm_);
  MPI_Comm_free(&fp_comm_);
  if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
}

std::string MpiCommunicator::members() const {
  std::string s = "[";
  for (size_t i = 0; i < ranks_.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks_[i]);
  return s + "]";
}

void MpiCommunicator::wait(MPI_Request& req, const char* op, uint64_t seq) {
  if (!seq) seq = seq_;
  if (poll_until(req, deadline_from_now(), nullptr, [&] { return !member_gone(op, seq).empty(); })) return;
  // The collective cannot be cancelled: this communicator is unusable from here on.
  if (std::string gone = member_gone(op, seq); !gone.empty()) {
    mark_broken("a rank ended its program while this one waited for it");
    GLOBE_FAIL(gone);
  }
  mark_broken();
  GLOBE_FAIL(timed_out(op, seq));
}

std::string MpiCommunicator::member_gone(const char* op, uint64_t seq) const {
  for (int r : ranks_) {
    if (r == ranks_[size_t(rank_)]) continue;
    const auto entered = collectives_before_leaving(r, ranks_);
    if (!entered || *entered >= seq) continue;
    const std::string waiting = waiting_for();
    return detail::concat("[", op, "] collective #", seq, " on ranks ", members(), ": rank ", r,
                          " ended its program after ", *entered, " collectives on these ranks, so it never enters this one",
                          waiting.empty() ? "" : " (waiting for " + waiting + ")", ". ",
                          kRanksRanDifferentCollectives);
  }
  return "";
}

std::string MpiCommunicator::timed_out(const char* op, uint64_t seq) {
  return detail::concat("[", op, "] collective #", seq, " on ranks ", members(), " timed out after ", timeout_seconds(),
                        " s: ", missing_ranks(seq), " (GLOBE_TIMEOUT sets the limit)");
}

// Which members are stuck in the same collective: every member that timed out tells the others
// its sequence number on the side communicator and listens for theirs for a grace period; the ones
// not heard from are the ones that never arrived.
std::string MpiCommunicator::missing_ranks(uint64_t seq) {
  const uint64_t mine = seq;
  std::vector<char> msg(sizeof mine);
  std::memcpy(msg.data(), &mine, sizeof mine);
  const double grace_s = std::min(5.0, timeout_seconds());
  RollCall call = roll_call(check_comm_, group_ranks_, ranks_, rank_, kStuckTag, msg,
                            std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(grace_s * 1000)));
  for (int r = 0; r < size(); ++r)  // a member stuck in another collective did not arrive at this one
    if (r != rank_ && !call.heard[r].empty() && std::memcmp(call.heard[r].data(), &mine, sizeof mine) != 0)
      call.missing += (call.missing.empty() ? "" : ", ") + std::to_string(ranks_[r]);
  if (call.missing.empty()) return "every rank arrived but the collective did not complete";
  return "ranks [" + call.missing + "] did not arrive";
}

void MpiCommunicator::wait_both(MPI_Request (&reqs)[2], const char* op, uint64_t seq) {
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

// Ring reduce-scatter with the given (uneven, possibly empty) chunks: at step s a member sends
// its partial sum of chunk (rank - s - 1) to the right and receives the left neighbour's partial
// sum of chunk (rank - s - 2), adding its own part; after p - 1 steps the chunk received is its
// own, complete. `in` is only read. On 16 MiB float32 over 2 ranks Open MPI 4.1's reduce-scatter
// reaches ~2.5 GB/s here (its non-blocking one, libnbc's, is a reduce to one rank followed by a
// scatter); this ring reaches 5-6 GB/s (bench/RESULTS.md, "Boxing").
void MpiCommunicator::ring_reduce_scatter(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  const int p = size(), right = (rank_ + 1) % p, left = (rank_ + p - 1) % p;
  const DType dt = in.dtype();
  GLOBE_CHECK(out.dtype() == dt, "[reduce_scatter] dtypes differ: ", describe(in), " into ", describe(out));
  const size_t item = itemsize(dt);
  const char* src = static_cast<const char*>(ptr(in, "reduce_scatter"));
  char* dst = static_cast<char*>(ptr(out, "reduce_scatter"));
  std::vector<int64_t> start(p, 0);
  int64_t largest = 0;
  for (int c = 0; c < p; ++c) {
    start[c] = c ? start[c - 1] + counts[c - 1] : 0;
    largest = std::max(largest, counts[c]);
  }
  auto wrap = [p](int c) { return (c % p + p) % p; };
  // Partial sums travel in `acc`; what arrives lands in `scratch` (both chunk-sized).
  Tensor acc = Tensor::uninitialized({largest}, dt), scratch = Tensor::uninitialized({largest}, dt);
  const char* sending = src + start[wrap(rank_ - 1)] * item;
  for (int step = 0; step < p - 1; ++step) {
    const int send_c = wrap(rank_ - step - 1), recv_c = wrap(rank_ - step - 2);
    MPI_Request reqs[2];
    check_mpi(MPI_Irecv(scratch.raw_data(), as_count(counts[recv_c], "reduce_scatter"), mpi_type(dt), left, kRingTag,
                        ring_comm_, &reqs[0]),
              "reduce_scatter");
    check_mpi(MPI_Isend(sending, as_count(counts[send_c], "reduce_scatter"), mpi_type(dt), right, kRingTag, ring_comm_,
                        &reqs[1]),
              "reduce_scatter");
    wait_both(reqs, "reduce_scatter");
    // The last chunk received is this member's: its sum goes straight into `out`.
    void* sum = step == p - 2 ? static_cast<void*>(dst) : acc.raw_data();
    kernels::add_arrays(dt, sum, scratch.raw_data(), src + start[recv_c] * item, counts[recv_c]);
    sending = static_cast<const char*>(acc.raw_data());
  }
}

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
  const double grace_s = std::min(5.0, timeout_seconds());
  const RollCall call = roll_call(check_comm_, group_ranks_, ranks_, rank_, kDivergeTag, mine,
                                  std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(grace_s * 1000)));
  // Abandoned: sends to members that did not answer, or the collective itself when its side check
  // failed first. MPI could not finalise with them pending.
  if (!call.missing.empty() || pending) mark_broken("a collective of ranks that diverged was abandoned");
  std::string diff, others;  // the first member that differs in full, the others by rank
  for (int r = 0; r < size(); ++r) {
    if (r == rank_ || call.heard[r].empty() || call.heard[r] == mine) continue;
    if (diff.empty()) diff = OpHistory::first_difference(mine, ranks_[rank_], call.heard[r], ranks_[r]);
    else others += (others.empty() ? "" : ", ") + std::to_string(ranks_[r]);
  }
  if (!others.empty()) diff += "; ranks [" + others + "] differ from this rank too";
  if (diff.empty())
    diff = "their histories of global ops agree, so one of them issued a collective the others did not";
  GLOBE_FAIL("[consistency] ranks diverged at ", diff, call.missing.empty() ? "" : "; ranks [" + call.missing + "] did not say",
             " (seen by the fingerprint of ", op, " #", seq ? seq : seq_, " on ranks ", members(),
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
  check_mpi(MPI_Ireduce_scatter(buf, mine, l.counts.data(), mpi_type(dt), MPI_SUM, comm_, &req), "reduce_scatter");
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

// An all-reduce in flight, in one of three forms by size: up to kCodedMaxBytes the data and its
// fingerprint's sum code are reduced together in a copy (coded); up to kRingMinBytes Open MPI's
// MPI_Iallreduce runs in place beside a side check; above, a ring (reduce-scatter, then
// all-gather, around the members) beside a side check: on these machines Open MPI's own large
// all-reduce reaches a fraction of point-to-point bandwidth (docs/design.md, Platform notes),
// while the ring moves 2 (p-1)/p of the bytes at point-to-point speed. Ring chunks follow the
// balanced split, so any element count works. Each ring step is one non-blocking exchange with
// the neighbours, tagged by the collective's sequence number so that several all-reduces (a
// bucket in flight, a blocking one beside it) never take each other's messages. test() finishes
// whatever steps have arrived and posts the next; wait() runs them to the end under the deadline.
class MpiCommunicator::AllReduce final : public Request::Impl {
 public:
  AllReduce(MpiCommunicator& c, const Tensor& t) : c_(c), t_(t), seq_(++c.seq_) {
    data_ = static_cast<char*>(ptr(t, "all_reduce"));
    const int64_t bytes = t.numel() * int64_t(itemsize(t.dtype()));
    if (bytes >= kRingMinBytes && t.numel() >= c.size()) {
      kind_ = Kind::ring;
      side_ = c.start_side(fingerprints());
      scratch_ = Tensor::uninitialized({split_range(t.numel(), c.size(), 0).length}, t.dtype());
      steps_ = 2 * (c.size() - 1);
      post_ring_step();
    } else if (fingerprints() && bytes <= kCodedMaxBytes) {
      kind_ = Kind::coded;
      fp_ = collective_fingerprint(seq_);
      const size_t n = size_t(t.numel()), len = size_t(sum_code_len(t.dtype(), c.size()));
      coded_.resize((n + len) * itemsize(t.dtype()));
      std::memcpy(coded_.data(), data_, size_t(bytes));
      write_sum_code(fp_, t.dtype(), c.size(), coded_.data() + bytes);
      check_mpi(MPI_Iallreduce(MPI_IN_PLACE, coded_.data(), as_count(int64_t(n + len), "all_reduce"),
                               mpi_type(t.dtype()), MPI_SUM, c.comm_, &reqs_[0]),
                "all_reduce");
    } else {
      kind_ = Kind::plain;
      side_ = c.start_side(fingerprints());
      check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data_, as_count(t.numel(), "all_reduce"), mpi_type(t.dtype()), MPI_SUM,
                               c.comm_, &reqs_[0]),
                "all_reduce");
    }
  }
  ~AllReduce() override {
    if (done_) return;
    // Abandoned while unwinding an error: the ring's steps are cancelled; a collective cannot be,
    // so MPI must not be finalised with one pending.
    if (kind_ == Kind::ring) cancel_pending(reqs_, 2);
    if ((kind_ != Kind::ring && !data_done_) || !side_.code.empty()) mark_broken("an all-reduce in flight was abandoned");
  }
  bool test() override { return advance(false); }
  void wait() override { advance(true); }

 private:
  enum class Kind { coded, plain, ring };

  Range chunk(int c) const { return split_range(t_.numel(), c_.size(), (c % c_.size() + c_.size()) % c_.size()); }

  // Step s < p-1 (reduce-scatter): send chunk rank-s, receive chunk rank-s-1 into scratch and
  // add it; after p-1 steps chunk rank+1 is summed here. Then (all-gather) step p-1+g sends chunk
  // rank+1-g and receives chunk rank-g in place.
  void post_ring_step() {
    const int p = c_.size(), me = c_.rank_, right = (me + 1) % p, left = (me + p - 1) % p;
    const int g = step_ - (p - 1);
    const Range s = chunk(g < 0 ? me - step_ : me + 1 - g), r = chunk(g < 0 ? me - step_ - 1 : me - g);
    const size_t item = itemsize(t_.dtype());
    void* into = g < 0 ? scratch_.raw_data() : data_ + r.start * item;
    const int tag = kRingTagBase + int(seq_ % kRingTags);
    check_mpi(MPI_Irecv(into, as_count(r.length, "all_reduce"), mpi_type(t_.dtype()), left, tag, c_.ring_comm_,
                        &reqs_[0]),
              "all_reduce");
    check_mpi(MPI_Isend(data_ + s.start * item, as_count(s.length, "all_reduce"), mpi_type(t_.dtype()), right, tag,
                        c_.ring_comm_, &reqs_[1]),
              "all_reduce");
  }

  void finish_ring_step() {
    if (step_ >= c_.size() - 1) return;  // all-gather: received in place
    const Range r = chunk(c_.rank_ - step_ - 1);
    kernels::accumulate_array(t_.dtype(), data_ + r.start * itemsize(t_.dtype()), scratch_.raw_data(), r.length);
  }

  // Whether the exchange in flight (the MPI all-reduce, or the ring's step) has arrived.
  bool arrived(bool block) {
    if (block) {
      if (kind_ == Kind::plain) c_.finish_side(side_, "all_reduce", true, seq_);  // first: see all_gather_v
      c_.wait_both(reqs_, "all_reduce", seq_);
      return true;
    }
    int done = 0;
    MPI_Testall(2, reqs_, &done, MPI_STATUSES_IGNORE);
    return done;
  }

  bool advance(bool block) {
    while (!data_done_) {
      if (!arrived(block)) return false;
      if (kind_ == Kind::ring) {
        finish_ring_step();
        if (++step_ < steps_) {
          post_ring_step();
          continue;
        }
      }
      data_done_ = true;
    }
    if (done_) return true;
    if (!block && !side_.code.empty()) {
      int done = 0;
      MPI_Test(&side_.req, &done, MPI_STATUS_IGNORE);
      if (!done) return false;
    }
    done_ = true;
    if (kind_ == Kind::coded) {
      const size_t bytes = size_t(t_.numel()) * itemsize(t_.dtype());
      if (!sum_code_agrees(fp_, t_.dtype(), c_.size(), coded_.data() + bytes)) c_.diverged("all_reduce", false, seq_);
      std::memcpy(data_, coded_.data(), bytes);
    } else {
      c_.finish_side(side_, "all_reduce", false, seq_);
    }
    return true;
  }

  MpiCommunicator& c_;
  Tensor t_, scratch_;
  const uint64_t seq_;
  char* data_ = nullptr;
  Kind kind_ = Kind::plain;
  Side side_;
  uint32_t fp_ = 0;
  std::vector<char> coded_;  // coded: the data, then its fingerprint's sum code
  MPI_Request reqs_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int step_ = 0, steps_ = 0;
  bool data_done_ = false, done_ = false;
};

void MpiCommunicator::all_reduce_sum(const Tensor& t) { AllReduce(*this, t).wait(); }

Request MpiCommunicator::start_all_reduce_sum(const Tensor& t) {
  return Request(std::make_shared<AllReduce>(*this, t));
}

void MpiCommunicator::all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  ++seq_;
  GLOBE_CHECK(int(counts.size()) == size() && local.numel() == counts[rank_], "[all_gather] counts do not ",
              "match: local ", describe(local), " for ", counts.size(), " members");
  if (fingerprints() && out.numel() * int64_t(itemsize(out.dtype())) <= kCodedMaxBytes)
    return all_gather_coded(local, out, counts);
  Side side = start_side(fingerprints());
  Layout l = layout(counts, "all_gather");
  MPI_Request req;
  check_mpi(MPI_Iallgatherv(ptr(local, "all_gather"), l.counts[rank_], mpi_type(local.dtype()),
                            ptr(out, "all_gather"), l.counts.data(), l.displs.data(), mpi_type(out.dtype()),
                            comm_, &req),
            "all_gather");
  finish_side(side, "all_gather", true);  // first: with a rank in another collective this one never ends
  wait(req, "all_gather");
}

void MpiCommunicator::reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  ++seq_;
  GLOBE_CHECK(int(counts.size()) == size() && out.numel() == counts[rank_], "[reduce_scatter] counts do not ",
              "match: out ", describe(out), " for ", counts.size(), " members");
  const int64_t bytes = in.numel() * int64_t(itemsize(in.dtype()));
  if (fingerprints() && bytes <= kCodedMaxBytes) return reduce_scatter_coded(in, out, counts);
  Side side = start_side(fingerprints());
  if (bytes >= kRingMinBytes) {
    ring_reduce_scatter(in, out, counts);
  } else {
    Layout l = layout(counts, "reduce_scatter");
    MPI_Request req;
    check_mpi(MPI_Ireduce_scatter(ptr(in, "reduce_scatter"), ptr(out, "reduce_scatter"), l.counts.data(),
                                  mpi_type(in.dtype()), MPI_SUM, comm_, &req),
              "reduce_scatter");
    finish_side(side, "reduce_scatter", true);
    wait(req, "reduce_scatter");
  }
  finish_side(side, "reduce_scatter", false);  // the ring's, or nothing left
}

void MpiCommunicator::all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts,
                                   const Tensor& recv, const std::vector<int64_t>& recv_counts) {
  ++seq_;
  const int64_t bytes = std::max(send.numel(), recv.numel()) * int64_t(itemsize(send.dtype()));
  if (fingerprints() && bytes <= kCodedMaxBytes) return all_to_all_coded(send, send_counts, recv, recv_counts);
  Side side = start_side(fingerprints());
  Layout s = layout(send_counts, "all_to_all"), r = layout(recv_counts, "all_to_all");
  MPI_Request req;
  check_mpi(MPI_Ialltoallv(ptr(send, "all_to_all"), s.counts.data(), s.displs.data(), mpi_type(send.dtype()),
                           ptr(recv, "all_to_all"), r.counts.data(), r.displs.data(), mpi_type(recv.dtype()),
                           comm_, &req),
            "all_to_all");
  finish_side(side, "all_to_all", true);  // first: with a rank in another collective this one never ends
  wait(req, "all_to_all");
}

// Point-to-point on the ring communicator, tagged by the collective's number (as the ring
// all-reduce), beside a side check; each receive checks its count.
void MpiCommunicator::exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) {
  ++seq_;
  const int p = size();
  GLOBE_CHECK(int(send.size()) == p && int(recv.size()) == p, "[exchange] ", send.size(), " send and ", recv.size(),
              " receive tensors for ", p, " members");
  Side side = start_side(fingerprints());
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
  // A piece of the wrong size is reported after the exchange and its side check completed, so
  // that every member leaves the collective and the communicator stays usable.
  std::string wrong;
  try {
    for (int s = 0; s < p; ++s) {
      if (s == rank_) continue;
      MPI_Status status;  // a receive that never comes is cancelled below, not left broken
      if (!poll_until(reqs[size_t(2 * s)], deadline_from_now(), &status,
                      [&] { return !member_gone("exchange", seq_).empty(); })) {
        if (std::string gone = member_gone("exchange", seq_); !gone.empty()) GLOBE_FAIL(gone);
        GLOBE_FAIL(timed_out("exchange", seq_));
      }
      int count = 0;
      MPI_Get_count(&status, mpi_type(recv[size_t(s)].dtype()), &count);
      if (wrong.empty() && (count != recv[size_t(s)].numel() || status.MPI_ERROR == MPI_ERR_TRUNCATE))
        wrong = "[exchange] rank " + std::to_string(ranks_[s]) + " sent " + std::to_string(count) + " elements where " +
                std::to_string(recv[size_t(s)].numel()) +
                " were expected: the ranks disagree about the pieces' shapes";
    }
    for (int s = 0; s < p; ++s)
      if (s != rank_) wait(reqs[size_t(2 * s + 1)], "exchange");
  } catch (...) {
    cancel_pending(reqs.data(), reqs.size());
    throw;
  }
  finish_side(side, "exchange", false);
  GLOBE_CHECK(wrong.empty(), wrong);
}

void MpiCommunicator::broadcast(const Tensor& t, int root) {
  ++seq_;
  Side side = start_side(fingerprints());
  MPI_Request req;
  check_mpi(MPI_Ibcast(ptr(t, "broadcast"), as_count(t.numel(), "broadcast"), mpi_type(t.dtype()), root,
                       comm_, &req),
            "broadcast");
  finish_side(side, "broadcast", true);  // first: with a rank in another collective this one never ends
  wait(req, "broadcast");
}

Request MpiCommunicator::isend(const Tensor& t, int peer, int tag) {
  MPI_Request req;
  check_mpi(MPI_Isend(ptr(t, "send"), as_count(t.numel(), "send"), mpi_type(t.dtype()), peer, tag, comm_, &req),
            "send");
  return Request(std::make_shared<MpiRequest>(req, t, ranks_[peer], false));
}

Request MpiCommunicator::irecv(const Tensor& t, int peer, int tag) {
  MPI_Request req;
  check_mpi(MPI_Irecv(ptr(t, "recv"), as_count(t.numel(), "recv"), mpi_type(t.dtype()), peer, tag, comm_, &req),
            "recv");
  return Request(std::make_shared<MpiRequest>(req, t, ranks_[peer], true));
}

void MpiCommunicator::barrier() {
  ++seq_;
  if (fingerprints()) {  // the side check, a reduction, is itself a barrier
    Side side = start_side(true);
    finish_side(side, "barrier", false);
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
  const RollCall call = roll_call(check_comm_, group_ranks_, ranks_, rank_, 0, mine, deadline_from_now());
  if (!call.missing.empty()) mark_broken();  // abandoned sends: MPI_Finalize would wait for the missing ranks
  GLOBE_CHECK(call.missing.empty(), "[consistency] global op #", seq, " (", what, ") on ranks ", members(),
              ": ranks [", call.missing, "] did not arrive within ", timeout_seconds(), " s");
  std::string diff;
  for (int r = 0; r < size(); ++r) {
    if (r == rank_) continue;
    uint64_t their_seq;
    std::memcpy(&their_seq, call.heard[r].data(), 8);
    std::string their_what(call.heard[r].data() + 8);
    if (their_seq != seq || their_what != what.substr(0, kCheckBytes - 9))
      diff += " rank " + std::to_string(ranks_[r]) + " runs #" + std::to_string(their_seq) + " (" + their_what + ");";
  }
  GLOBE_CHECK(diff.empty(), "[consistency] ranks diverged at global op #", seq, ": this rank (",
              ranks_[rank_], ") runs (", what, ") but", diff);
}

}  // namespace globe::dist
