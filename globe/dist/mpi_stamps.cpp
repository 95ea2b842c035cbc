// The MPI communicator's fingerprints (fingerprint.h, docs/design.md §13.1): the stamps every
// collective exchanges with every member, point to point on a context of their own, tagged by the
// collective's number. Small collectives send their data in them (one exchange, no collective of
// Open MPI's); larger ones exchange them beside their data. Disagreeing stamps end in diverged(),
// where the members compare their op histories.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "globe/dist/fingerprint.h"
#include "globe/dist/mpi_communicator.h"
#include "globe/dist/mpi_internal.h"
#include "globe/dist/runtime.h"

namespace globe::dist {

using namespace mpi;

namespace {

constexpr int64_t round16(int64_t n) { return (n + 15) & ~int64_t(15); }

}  // namespace

MpiCommunicator::Stamps::~Stamps() {
  if (posted_ && !arrived_) abandon();
}

// Abandoned with messages in flight (an error unwinds past a collective that was started). What
// the members already matched finishes within a second (they are in this collective too); then
// the receives are cancelled, and the buffer of a send still pending is kept: a member that arrives
// later may still read it (a message past the eager size is read from here; the inline buffer is
// below every eager size, its sends copied out when posted). The communicator is then broken (§9).
void MpiCommunicator::Stamps::abandon() noexcept {
  try {
    const Clock::time_point until = std::min(grace_from_now(), Clock::now() + std::chrono::seconds(1));
    if (poll([this] { return test(); }, until)) return;
  } catch (...) {  // an MPI error while testing: abandoned all the same
  }
  cancel_pending(reqs_.data(), size_t(2 * (p_ - 1)));
  buf_.abandon_heap();
  mark_broken("a collective's stamps in flight were abandoned");
}

void MpiCommunicator::Stamps::lay_out(MpiCommunicator& c, const char* op, uint64_t seq, Pieces send, Pieces recv) {
  op_ = op;
  seq_ = seq;
  stamp_[0] = collective_fingerprint(seq);
  // Collectives of two kinds never agree. `op` is a literal: the last one's code is remembered.
  thread_local const char* last_op = nullptr;
  thread_local uint32_t last_code = 0;
  if (op != last_op) last_code = mix(kMixSeed, std::string_view(op)), last_op = op;
  stamp_[1] = last_code;
  const int p = p_ = c.size(), me = c.rank_;
  at_.resize(size_t(4 * p));
  int64_t end = 0;
  for (int k = 0; k < p; ++k) {  // the pieces to send: one for all, or one per other member
    at_[size_t(k)] = end;
    at_[size_t(2 * p + k)] = send.bytes(k);
    if (!send.each ? k == 0 : k != me) end += round16(kStampBytes + send.bytes(k));
    if (!send.each) at_[size_t(k)] = 0;
  }
  for (int k = 0; k < p; ++k) {  // what arrives
    at_[size_t(p + k)] = k == me ? at_[size_t(me)] : end;
    at_[size_t(3 * p + k)] = recv.bytes(k);
    if (k != me) end += round16(kStampBytes + recv.bytes(k));
  }
  buf_.resize(size_t(end));
  reqs_.resize(size_t(2 * (p - 1)));
  for (int i = 0; i < 2 * (p - 1); ++i) reqs_[size_t(i)] = MPI_REQUEST_NULL;
  c_ = &c;  // last: until here nothing is in flight
}

void MpiCommunicator::Stamps::post() {
  const int p = p_, me = c_->rank_, tag = int(seq_ % kRingTags);
  char* buf = buf_.data();
  MPI_Request* req = reqs_.data();
  for (int k = 0; k < p; ++k)  // every piece stamped before the first send (one may serve all)
    if (k != me) std::memcpy(buf + at_[size_t(k)], stamp_, kStampBytes);
  posted_ = true;
  for (int k = 0; k < p; ++k) {
    if (k == me) continue;
    check_mpi(MPI_Irecv(buf + at_[size_t(p + k)], int(kStampBytes + at_[size_t(3 * p + k)]), MPI_BYTE, k, tag,
                        c_->fp_comm_, req++),
              op_);
  }
  for (int i = 1; i < p; ++i) {  // member rank+1 first, so that not every member sends to member 0 first
    const int k = (me + i) % p;
    char* piece = buf + at_[size_t(k)];
    check_mpi(MPI_Isend(piece, int(kStampBytes + at_[size_t(2 * p + k)]), MPI_BYTE, k, tag, c_->fp_comm_, req++), op_);
  }
}

bool MpiCommunicator::Stamps::test() {
  if (c_ == nullptr || arrived_) return true;
  const int n = 2 * (p_ - 1);
  Small<MPI_Status, 14> statuses;
  statuses.resize(size_t(n));
  int done = 0;
  const int rc = MPI_Testall(n, reqs_.data(), &done, statuses.data());
  if (done) settle(rc, statuses.data());
  return done;
}

// Everything arrived: each received message must be the stamp this member sent and the bytes it
// expects. A longer message is truncated (MPI leaves that request to be freed here); a shorter one
// or another stamp disagrees too.
void MpiCommunicator::Stamps::settle(int rc, const MPI_Status* statuses) {
  arrived_ = true;
  const int p = p_, me = c_->rank_;
  for (int k = 0, i = 0; k < p; ++k) {
    if (k == me) continue;
    const MPI_Status& s = statuses[i++];
    int count = -1;
    if (rc == MPI_SUCCESS || s.MPI_ERROR == MPI_SUCCESS) MPI_Get_count(&s, MPI_BYTE, &count);
    agree_ = agree_ && count == kStampBytes + at_[size_t(3 * p + k)] &&
             std::memcmp(buf_.data() + at_[size_t(p + k)], stamp_, kStampBytes) == 0;
  }
  if (rc != MPI_SUCCESS) {
    agree_ = false;
    cancel_pending(reqs_.data(), size_t(2 * (p - 1)));  // frees the requests that failed
    if (rc != MPI_ERR_IN_STATUS) check_mpi(rc, op_);
  }
}

void MpiCommunicator::Stamps::finish(bool pending) {
  if (c_ == nullptr) return;
  if (!test())
    c_->watch_.wait([this] { return test(); }, op_, seq_,
                    [this] { cancel_pending(reqs_.data(), size_t(2 * (p_ - 1))); });
  MpiCommunicator& c = *c_;
  c_ = nullptr;
  if (!agree_) c.diverged(op_, pending, seq_);
}

void MpiCommunicator::start_side(Stamps& side, bool on, const char* op) {
  if (!on) return;
  side.lay_out(*this, op, seq_, {}, {});
  side.post();
}

void MpiCommunicator::diverged(const char* op, bool pending, uint64_t seq) {
  static const OpHistory none("");
  const OpHistory* h = current_history();
  const std::vector<char> mine = (h ? h : &none)->serialize();
  const RollCall call = watch_.roll_call(kDivergeTag, mine, grace_from_now());
  // Abandoned: sends to members that did not answer, or the collective itself when its stamps
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

// Each member's piece, to every other member in one copy.
void MpiCommunicator::all_gather_stamped(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  const int64_t item = int64_t(itemsize(out.dtype()));
  const Layout l = layout(counts, "all_gather");
  const char* src = static_cast<const char*>(ptr(local, "all_gather"));  // checked before entering
  char* dst = static_cast<char*>(ptr(out, "all_gather"));
  Stamps s;
  s.lay_out(*this, "all_gather", seq_, {counts[size_t(rank_)], nullptr, item}, {0, counts.data(), item});
  copy_bytes(s.to(0), src, counts[size_t(rank_)] * item);
  s.post();
  s.finish(false);
  for (int k = 0; k < size(); ++k) copy_bytes(dst + l.displs[size_t(k)] * item, s.from(k), counts[size_t(k)] * item);
}

// Chunk k to member k; this member's chunk is summed in member order, so every member's sum of
// the same chunk has the same bits.
void MpiCommunicator::reduce_scatter_stamped(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  const DType dt = in.dtype();
  GLOBE_CHECK(out.dtype() == dt, "[reduce_scatter] dtypes differ: ", describe(in), " into ", describe(out));
  const int64_t item = int64_t(itemsize(dt)), mine = counts[size_t(rank_)];
  const Layout l = layout(counts, "reduce_scatter");
  const char* src = static_cast<const char*>(ptr(in, "reduce_scatter"));  // checked before entering
  void* dst = ptr(out, "reduce_scatter");
  Stamps s;
  s.lay_out(*this, "reduce_scatter", seq_, {0, counts.data(), item}, {mine, nullptr, item});
  for (int k = 0; k < size(); ++k)
    if (k != rank_) copy_bytes(s.to(k), src + l.displs[size_t(k)] * item, counts[size_t(k)] * item);
  s.post();
  s.finish(false);
  auto term = [&](int k) { return k == rank_ ? src + l.displs[size_t(rank_)] * item : s.from(k); };
  sum_in_member_order(dt, dst, size(), mine, term);
}

// Chunk k to member k, in place of MPI's all-to-all.
void MpiCommunicator::all_to_all_stamped(const Tensor& send, const std::vector<int64_t>& send_counts,
                                         const Tensor& recv, const std::vector<int64_t>& recv_counts) {
  const int64_t item = int64_t(itemsize(send.dtype()));
  const Layout sl = layout(send_counts, "all_to_all"), rl = layout(recv_counts, "all_to_all");
  const char* src = static_cast<const char*>(ptr(send, "all_to_all"));
  char* dst = static_cast<char*>(ptr(recv, "all_to_all"));
  Stamps s;
  s.lay_out(*this, "all_to_all", seq_, {0, send_counts.data(), item}, {0, recv_counts.data(), item});
  for (int k = 0; k < size(); ++k)
    if (k != rank_) copy_bytes(s.to(k), src + sl.displs[size_t(k)] * item, send_counts[size_t(k)] * item);
  s.post();
  s.finish(false);
  for (int k = 0; k < size(); ++k) {
    const char* piece = k == rank_ ? src + sl.displs[size_t(k)] * item : s.from(k);
    copy_bytes(dst + rl.displs[size_t(k)] * item, piece, recv_counts[size_t(k)] * item);
  }
}

}  // namespace globe::dist
