// Waiting with a deadline, and saying who is missing when it passes: what every communicator over
// MPI shares (the MPI one, and the NCCL one whose host side is MPI). A peer that never arrives is
// an error naming the op, its collective number and the ranks, never a hang (docs/design.md §9).
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace globe::dist {

using Clock = std::chrono::steady_clock;

// Throws globe::Error "[op] MPI error: <MPI's message>" when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* op);
// Asks `done` until it says true (true) or `deadline` passes (false), spinning, then yielding the
// core, then sleeping between asks. `give_up`, asked now and then while it waits, ends the wait
// early (false) when it says true.
bool poll(const std::function<bool()>& done, Clock::time_point deadline, const std::function<bool()>& give_up = {});
// poll() on an MPI request (MPI moves data only while it is tested).
bool poll_until(MPI_Request& req, Clock::time_point deadline, MPI_Status* status = nullptr,
                const std::function<bool()>& give_up = {});
// Now + GLOBE_TIMEOUT.
Clock::time_point deadline_from_now();
// Now + min(5 s, GLOBE_TIMEOUT): how long members that already failed listen for each other.
Clock::time_point grace_from_now();
// Cancels and frees the point-to-point requests still pending (a wait failed: MPI must not write
// into buffers the caller frees while the error unwinds).
void cancel_pending(MPI_Request* reqs, size_t n);

// What a roll call heard: each member's message (empty for this rank and for members that did
// not answer in time), and the world ranks of those that did not, as "1, 3".
struct RollCall {
  std::vector<std::vector<char>> heard;
  std::string missing;
};
// Sends `mine` to every other member and receives theirs of the same size, until `deadline`.
// Member i is rank `peers[i]` of `comm` and world rank `world[i]` (what errors name); this process
// is member `me`. Unanswered receives are cancelled; sends to missing members are abandoned. Used
// where a plain collective could hang: consistency checks, communicator creation, timeout
// diagnosis.
RollCall roll_call(MPI_Comm comm, const std::vector<int>& peers, const std::vector<int>& world, int me, int tag,
                   const std::vector<char>& mine, Clock::time_point deadline);

// A group's watch over its collectives: who the members are, whether one ended its program before
// collective #seq, and, when a wait timed out, which members never arrived (learnt over its own
// MPI context, so it works while the group's data path is stuck).
class GroupWatch {
 public:
  // `comm` is the group's MPI communicator (duplicated here); `ranks` its members' world ranks.
  GroupWatch(MPI_Comm comm, std::vector<int> ranks);
  ~GroupWatch();
  GroupWatch(const GroupWatch&) = delete;
  GroupWatch& operator=(const GroupWatch&) = delete;

  int rank() const { return rank_; }
  int size() const { return int(ranks_.size()); }
  const std::vector<int>& world_ranks() const { return ranks_; }
  MPI_Comm check_comm() const { return check_comm_; }
  // "[0, 1]".
  std::string members() const;
  // "[op] collective #seq ...: rank R ended its program ..." when a member ended its program before
  // entering collective #seq (it never will); empty while every member may still come.
  std::string member_gone(const char* op, uint64_t seq) const;
  // The error of collective #seq timing out: the op, its number, the members and who did not arrive.
  std::string timed_out(const char* op, uint64_t seq);
  // Asks `done` until it says true or the deadline passes, giving up early when a member ended its
  // program. Then `abandon` runs (the collective cannot finish: the caller cancels what it can) and
  // the error is thrown: the member that left, or who did not arrive.
  void wait(const std::function<bool()>& done, const char* op, uint64_t seq, const std::function<void()>& abandon);
  // roll_call() among the members on the check context.
  RollCall roll_call(int tag, const std::vector<char>& mine, Clock::time_point deadline);

 private:
  MPI_Comm check_comm_;
  std::vector<int> ranks_;        // world rank of each member
  std::vector<int> group_ranks_;  // 0 .. size()-1: each member's rank in check_comm_
  int rank_ = 0;
};

}  // namespace globe::dist
