// Communicator over an MPI communicator (Open MPI). Collectives run non-blocking and are waited
// on with a deadline (deadline.h), so a missing peer is an error, not a hang. Its sources, by
// concern: mpi_communicator.cpp (the collectives' plain forms, point-to-point, consistency),
// mpi_ring.cpp (the ring all-reduce and reduce-scatter for large tensors), mpi_stamps.cpp
// (fingerprints: the stamps every collective exchanges, carrying small collectives' data).
#pragma once

#include <mpi.h>

#include "globe/dist/communicator.h"
#include "globe/dist/deadline.h"
#include "globe/dist/mpi_internal.h"

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
  // Fingerprints (fingerprint.h, docs/design.md §13.1) travel in stamps (mpi_stamps.cpp): for
  // collective #seq every member sends every other member one message on fp_comm_, tagged by seq —
  // an 8-byte stamp (the collective's fingerprint and a hash of its op's name), then the bytes meant
  // for that member, if any — and receives theirs. A small collective's data travels in its stamps;
  // a large one's stamps travel beside it (a side check), waited first. Every collective of every
  // kind and size exchanges stamps with every member, so a member that issues another collective
  // meets these messages: a stamp or a size differs, and the members that see it throw at once.
  class Stamps {
   public:
    // Bytes per member: `each[k] * unit`, or `all * unit` for every member (sent from one copy).
    struct Pieces {
      int64_t all = 0;
      const int64_t* each = nullptr;
      int64_t unit = 1;
      int64_t bytes(int k) const { return (each ? each[k] : all) * unit; }
    };
    Stamps() = default;  // nothing in flight
    Stamps(const Stamps&) = delete;
    Stamps& operator=(const Stamps&) = delete;
    ~Stamps();  // abandoned while an error unwinds: abandon()
    // Lays out collective #seq's exchange for `op` (a string literal): after the stamp, `send`
    // bytes to each member and `recv` bytes from each. Then to(k) says where member k's bytes go.
    void lay_out(MpiCommunicator& c, const char* op, uint64_t seq, Pieces send, Pieces recv);
    char* to(int k) { return buf_.data() + at_[size_t(k)] + kStampBytes; }
    void post();
    bool active() const { return c_ != nullptr; }
    bool test();  // whether everything arrived (moves MPI on); true when none is in flight
    // Waits for everything, checks every stamp and size, and on a mismatch calls diverged();
    // `pending`: the collective the stamps travel beside is still in flight.
    void finish(bool pending);
    // What member k sent, after finish(); for this member, when `send` was one copy for all: that copy.
    const char* from(int k) const { return buf_.data() + at_[size_t(p_ + k)] + kStampBytes; }

   private:
    static constexpr int64_t kStampBytes = 8;
    void settle(int rc, const MPI_Status* statuses);
    void abandon() noexcept;

    MpiCommunicator* c_ = nullptr;
    const char* op_ = "";
    uint64_t seq_ = 0;
    uint32_t stamp_[2] = {0, 0};
    int p_ = 0;
    bool posted_ = false, arrived_ = false, agree_ = true;
    mpi::Small<char, 96> buf_;          // the piece for member k at at_[k], what k sent at at_[p + k]
    mpi::Small<int64_t, 32> at_;        // those offsets, then the bytes of each piece sent and received
    mpi::Small<MPI_Request, 16> reqs_;  // receives (member order, without this one), then sends
  };
  // Starts `side`, the stamps beside collective #seq_ (nothing when !on).
  void start_side(Stamps& side, bool on, const char* op);

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

  // The small collectives, their data in their stamps.
  void all_gather_stamped(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts);
  void reduce_scatter_stamped(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts);
  void all_to_all_stamped(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                          const std::vector<int64_t>& recv_counts);
  // The stamps of collective #seq (default the latest) disagreed: the members compare their op histories and
  // every one throws, naming the first op where they differ. `pending`: the collective itself is
  // still in flight (its stamps failed first).
  [[noreturn]] void diverged(const char* op, bool pending = false, uint64_t seq = 0);

  MPI_Comm comm_;
  GroupWatch watch_;     // members, deadlines; its own context for consistency and timeout messages
  MPI_Comm ring_comm_;   // separate context for the point-to-point steps of ring collectives
  MPI_Comm fp_comm_;     // separate context for stamps (fingerprints)
  int rank_ = 0;
  uint64_t seq_ = 0;          // collectives issued on this communicator
  uint64_t check_seq_ = 0;    // consistency checks issued
};

}  // namespace globe::dist
