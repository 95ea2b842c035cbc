#include "globe/dist/deadline.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "globe/base/error.h"
#include "globe/dist/runtime.h"

namespace globe::dist {

void check_mpi(int rc, const char* op) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  GLOBE_FAIL("[", op, "] MPI error: ", std::string(text, len));
}

// Polls until done or `deadline`. For the first 50 us (GLOBE_SPIN_US) it only asks again; until
// 2 ms it yields the core between asks (ranks may outnumber cores); then it sleeps between them,
// 20 us for 200 ms, then 200 us. The spinning phase is timed, not counted: MPI moves data only
// inside MPI_Test, and a 20 us sleep lasts ~100 us (timer slack), so a transfer that outlives the
// spinning phase is noticed late. With "200 polls" the phase lasted about as long as a 1 MiB
// transfer (~80 us), and a 1 MiB [0] -> [1] move took 0.085 or 0.2 ms from run to run
// (bench/RESULTS.md, "Boxing").
namespace {
int64_t spin_us() {
  const char* v = std::getenv("GLOBE_SPIN_US");
  return v ? std::atoll(v) : 50;
}
}  // namespace
static const int64_t kSpinUs = spin_us();

bool poll(const std::function<bool()>& done, Clock::time_point deadline, const std::function<bool()>& give_up) {
  using namespace std::chrono;
  const auto start = Clock::now();
  for (;;) {
    if (done()) return true;
    const auto now = Clock::now();
    if (now > deadline) return false;
    if (now - start < microseconds(kSpinUs)) {
      continue;  // asking alone: a yield is a system call, longer than a small collective
    } else if (now - start < milliseconds(2)) {
      sched_yield();
    } else {
      check_failure_notice();
      if (give_up && give_up()) return false;
      std::this_thread::sleep_for(microseconds(now - start < milliseconds(200) ? 20 : 200));
    }
  }
}

bool poll_until(MPI_Request& req, Clock::time_point deadline, MPI_Status* status,
                const std::function<bool()>& give_up) {
  return poll(
      [&] {
        int done = 0;
        MPI_Test(&req, &done, status ? status : MPI_STATUS_IGNORE);
        return done != 0;
      },
      deadline, give_up);
}

Clock::time_point deadline_from_now() {
  return Clock::now() + std::chrono::milliseconds(int64_t(timeout_seconds() * 1000.0));
}

Clock::time_point grace_from_now() {
  return Clock::now() + std::chrono::milliseconds(int64_t(std::min(5.0, timeout_seconds()) * 1000.0));
}

void cancel_pending(MPI_Request* reqs, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (reqs[i] != MPI_REQUEST_NULL) {
      MPI_Cancel(&reqs[i]);
      MPI_Request_free(&reqs[i]);
    }
}

RollCall roll_call(MPI_Comm comm, const std::vector<int>& peers, const std::vector<int>& world, int me, int tag,
                   const std::vector<char>& mine, Clock::time_point deadline) {
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
constexpr int kStuckTag = 0x57;  // on the check context: "I timed out in collective #seq"
}  // namespace

GroupWatch::GroupWatch(MPI_Comm comm, std::vector<int> ranks) : ranks_(std::move(ranks)) {
  MPI_Comm_rank(comm, &rank_);
  for (int i = 0; i < size(); ++i) group_ranks_.push_back(i);
  check_mpi(MPI_Comm_dup(comm, &check_comm_), "comm_dup");
}

GroupWatch::~GroupWatch() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&check_comm_);
}

std::string GroupWatch::members() const {
  std::string s = "[";
  for (size_t i = 0; i < ranks_.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks_[i]);
  return s + "]";
}

std::string GroupWatch::member_gone(const char* op, uint64_t seq) const {
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

RollCall GroupWatch::roll_call(int tag, const std::vector<char>& mine, Clock::time_point deadline) {
  return dist::roll_call(check_comm_, group_ranks_, ranks_, rank_, tag, mine, deadline);
}

// Which members are stuck in the same collective: every member that timed out tells the others
// its sequence number on the check context and listens for theirs for a grace period; the ones
// not heard from are the ones that never arrived.
std::string GroupWatch::timed_out(const char* op, uint64_t seq) {
  std::vector<char> msg(sizeof seq);
  std::memcpy(msg.data(), &seq, sizeof seq);
  RollCall call = roll_call(kStuckTag, msg, grace_from_now());
  for (int r = 0; r < size(); ++r)  // a member stuck in another collective did not arrive at this one
    if (r != rank_ && !call.heard[r].empty() && std::memcmp(call.heard[r].data(), &seq, sizeof seq) != 0)
      call.missing += (call.missing.empty() ? "" : ", ") + std::to_string(ranks_[r]);
  const std::string who = call.missing.empty() ? "every rank arrived but the collective did not complete"
                                               : "ranks [" + call.missing + "] did not arrive";
  return detail::concat("[", op, "] collective #", seq, " on ranks ", members(), " timed out after ", timeout_seconds(),
                        " s: ", who, " (GLOBE_TIMEOUT sets the limit)");
}

void GroupWatch::wait(const std::function<bool()>& done, const char* op, uint64_t seq,
                      const std::function<void()>& abandon) {
  if (done()) return;  // already there: no deadline to compute, no give-up check to build
  if (poll(done, deadline_from_now(), [&] { return !member_gone(op, seq).empty(); })) return;
  // The collective cannot be cancelled: the communicator is unusable from here on.
  if (abandon) abandon();
  if (std::string gone = member_gone(op, seq); !gone.empty()) {
    mark_broken("a rank ended its program while this one waited for it");
    GLOBE_FAIL(gone);
  }
  mark_broken();
  GLOBE_FAIL(timed_out(op, seq));
}

}  // namespace globe::dist
