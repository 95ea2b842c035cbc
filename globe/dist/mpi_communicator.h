// Communicator over an MPI communicator (Open MPI). Collectives run non-blocking and are waited
// on with a deadline (deadline.h), so a missing peer is an error, not a hang. Its sources, by
// concern: mpi_communicator.cpp (the collectives' plain forms, point-to-point, consistency),
// mpi_ring.cpp (the ring all-reduce and reduce-scatter for large tensors), mpi_coded.cpp
// (fingerprints: carried inside small collectives, or reduced beside large ones).
#pragma once

#include <mpi.h>

#include "globe/dist/communicator.h"
#include "globe/dist/deadline.h"

namespace globe::dist {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm`; `ranks` are its members' world ranks in group order.
  MpiCommunicator(MPI_Comm comm, std::vector<int> ranks);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return watch_.size(); }
  const std::vector<int>& world_ranks() const override { return watch_.world_ranks(); }

  void all_reduce_sum(const Tensor& t) override;
  Request start_all_reduce_sum(const Tensor& t) override;
  void all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) override;
  Request start_all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) override;
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

 // For a communicator of device memory beside this one (dist/cuda/nccl_communicator.cpp): it
  // numbers its collectives here, so the group has one count (collectives_entered, fingerprints),
  // checks their fingerprints beside them here, and waits under this group's watch.
  uint64_t begin_collective() { return ++seq_; }
  GroupWatch& watch() { return watch_; }
  // Fingerprints (fingerprint.h). A side check reduces a sum code of collective #seq's fingerprint
  // (default the latest) on fp_comm_ beside a collective too large to copy; start_side(false)
  // starts nothing.
  struct Side {
    MPI_Request req = MPI_REQUEST_NULL;
    std::vector<double> code;
    uint32_t fp = 0;
  };
  Side start_side(bool on);
  // `collective_pending`: the collective it checks is still in flight (abandoned if they disagree).
  void finish_side(Side& side, const char* op, bool collective_pending, uint64_t seq = 0);

 private:
  // An all-reduce in flight (mpi_ring.cpp); the blocking one is started and waited.
  class AllReduce;
  // An all-gather in flight (mpi_communicator.cpp); the blocking one is started and waited.
  class AllGather;

  // Waits for `req` until the deadline; the error names `op`, the collective's sequence number
  // (`seq`, default the latest) and the members.
  void wait(MPI_Request& req, const char* op, uint64_t seq = 0);
  // wait() on a receive and a send; on a timeout cancels whichever is still pending, then throws.
  void wait_both(MPI_Request (&reqs)[2], const char* op, uint64_t seq = 0);
  // Reduce-scatter (sum) around the ring for large tensors, for the reason the all-reduce's ring exists.
  void ring_reduce_scatter(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts);

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
  GroupWatch watch_;     // members, deadlines; its own context for consistency and timeout messages
  MPI_Comm ring_comm_;   // separate context for the point-to-point steps of ring collectives
  MPI_Comm fp_comm_;     // separate context for side checks of fingerprints
  std::vector<char> scratch_;  // coded copies of small collectives' data
  int rank_ = 0;
  uint64_t seq_ = 0;          // collectives issued on this communicator
  uint64_t check_seq_ = 0;    // consistency checks issued
};

}  // namespace globe::dist
