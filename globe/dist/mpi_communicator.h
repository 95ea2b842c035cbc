// Communicator over an MPI communicator (Open MPI). Collectives run non-blocking and are waited
// on with a deadline (runtime.h's timeout), so a missing peer is an error, not a hang.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>

#include "globe/dist/communicator.h"

namespace globe::dist {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm`; `ranks` are its members' world ranks in group order.
  MpiCommunicator(MPI_Comm comm, std::vector<int> ranks);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return int(ranks_.size()); }
  const std::vector<int>& world_ranks() const override { return ranks_; }

  void all_reduce_sum(const Tensor& t) override;
  Request start_all_reduce_sum(const Tensor& t) override;
  void all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) override;
  void reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) override;
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                    const std::vector<int64_t>& recv_counts) override;
  void exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) override;
  void broadcast(const Tensor& t, int root) override;
  Request isend(const Tensor& t, int peer, int tag) override;
  Request irecv(const Tensor& t, int peer, int tag) override;
  void barrier() override;
  void check_consistency(const std::string& what) override;
  uint64_t collectives_entered() const override { return seq_; }

 private:
  // An all-reduce in flight (mpi_communicator.cpp); the blocking one is started and waited.
  class AllReduce;

  // Waits for `req` until the deadline; the error names `op`, the collective's sequence number
  // (`seq`, default the latest) and the members.
  void wait(MPI_Request& req, const char* op, uint64_t seq = 0);
  // wait() on a receive and a send; on a timeout cancels whichever is still pending, then throws.
  void wait_both(MPI_Request (&reqs)[2], const char* op, uint64_t seq = 0);
  // After a timeout in collective #seq: "ranks [..] did not arrive", learnt from the members stuck alongside.
  std::string missing_ranks(uint64_t seq);
  // The error of collective #seq timing out: the op, its number, the members and who did not arrive.
  std::string timed_out(const char* op, uint64_t seq);
  // Reduce-scatter (sum) around the ring for large tensors, for the reason the all-reduce's ring exists.
  void ring_reduce_scatter(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts);
  std::string members() const;
  // "[op] collective #seq ...: rank R ended its program ..." when a member ended its program before
  // entering collective #seq (it never will); empty while every member may still come.
  std::string member_gone(const char* op, uint64_t seq) const;

  // Fingerprints (fingerprint.h). A side check reduces a sum code of the fingerprint on fp_comm_
  // beside a collective too large to copy; start_side(false) starts nothing.
  struct Side {
    MPI_Request req = MPI_REQUEST_NULL;
    std::vector<double> code;
    uint32_t fp = 0;
  };
  Side start_side(bool on);
  // `collective_pending`: the collective it checks is still in flight (abandoned if they disagree).
  void finish_side(Side& side, const char* op, bool collective_pending, uint64_t seq = 0);
  // The small collectives, with the fingerprint appended to their data.
  void all_gather_coded(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts);
  void reduce_scatter_coded(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts);
  void all_to_all_coded(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                        const std::vector<int64_t>& recv_counts);
  // The fingerprints of collective #seq_ disagreed: the members compare their op histories and
  // every one throws, naming the first op where they differ. `pending`: the collective itself is
  // still in flight (its side check failed first).
  [[noreturn]] void diverged(const char* op, bool pending = false, uint64_t seq = 0);
  char* scratch(size_t bytes);

  MPI_Comm comm_;
  MPI_Comm check_comm_;  // separate context for consistency and timeout messages
  MPI_Comm ring_comm_;   // separate context for the point-to-point steps of ring collectives
  MPI_Comm fp_comm_;     // separate context for side checks of fingerprints
  std::vector<char> scratch_;  // coded copies of small collectives' data
  std::vector<int> ranks_;        // world rank of each member
  std::vector<int> group_ranks_;  // 0 .. size()-1: each member's rank in comm_
  int rank_ = 0;
  uint64_t seq_ = 0;          // collectives issued on this communicator
  uint64_t check_seq_ = 0;    // consistency checks issued
};

// Throws globe::Error "[op] MPI error: <MPI's message>" when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* op);
// Tests `req` until it completes (true) or `deadline` passes (false), yielding the core meanwhile.
// `give_up`, asked now and then while it waits, ends the wait early (false) when it says true.
bool poll_until(MPI_Request& req, std::chrono::steady_clock::time_point deadline, MPI_Status* status = nullptr,
                const std::function<bool()>& give_up = {});
// Now + GLOBE_TIMEOUT.
std::chrono::steady_clock::time_point deadline_from_now();

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
                   const std::vector<char>& mine, std::chrono::steady_clock::time_point deadline);

}  // namespace globe::dist
