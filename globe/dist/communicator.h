// The communication backend interface. Globe's collectives take tensors (contiguous local
// tensors, on any device), never raw pointer + count at call sites. MPI implements it for host
// memory (mpi_communicator); HostStagedCommunicator carries GPU tensors over it
// (staged_communicator.h); a NCCL implementation can sit beside them. Every blocking call waits
// with a deadline: a peer that never arrives becomes an error naming the op and its sequence
// number, not a hang (docs/design.md §9).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "globe/core/tensor.h"

namespace globe::dist {

// An in-flight transfer or collective. Keeps its tensors alive until completion.
class Request {
 public:
  class Impl {
   public:
    virtual ~Impl() = default;
    virtual bool test() = 0;  // true once complete
    virtual void wait() = 0;  // throws on timeout
  };
  Request() = default;
  explicit Request(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  bool valid() const { return impl_ != nullptr; }
  bool test() { return !impl_ || impl_->test(); }
  void wait() {
    if (impl_) impl_->wait();
  }

 private:
  std::shared_ptr<Impl> impl_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  // This process's index in the group, and the group size.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // World ranks of the members, in group order.
  virtual const std::vector<int>& world_ranks() const = 0;
  // Collectives started on this communicator so far (numbered alike on every member); 0 where
  // they are not counted (a group of one).
  virtual uint64_t collectives_entered() const { return 0; }

  // Sum of every member's `t`, in place (same shape on all members).
  virtual void all_reduce_sum(const Tensor& t) = 0;
  // The same, started without waiting: `t` holds the sum once the request completes, and must not
  // be touched before. Request::test() moves it on (call it now and then); wait() finishes it.
  // Members start their all-reduces in the same order, as with the blocking collectives.
  virtual Request start_all_reduce_sum(const Tensor& t) = 0;
  // out = concatenation of every member's `local` (flat), member r contributing counts[r] elements.
  virtual void all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) = 0;
  // The same, started without waiting (a gather prefetched ahead of its use, nn/fully_shard.h):
  // `out` holds the concatenation once the request completes. By default it runs at once.
  virtual Request start_all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
    all_gather_v(local, out, counts);
    return Request();
  }
  // `in` holds size() consecutive chunks (counts[r] elements each); out = sum over members of
  // their chunk rank().
  virtual void reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) = 0;
  // Sends chunk r of `send` (send_counts[r] elements) to member r; receives chunk s of `recv`
  // (recv_counts[s] elements) from member s.
  virtual void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                            const std::vector<int64_t>& recv_counts) = 0;
  // An all-to-all of separate tensors: this member's send[s] arrives in member s's recv[rank()]
  // (same element count). send[rank()] and recv[rank()] are not touched: the caller moves its own
  // piece, so nothing is packed for it. Each tensor contiguous, and one for every other member
  // (0 elements where nothing crosses); they may be views into the caller's buffers (a received
  // piece lands where it belongs).
  virtual void exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) = 0;
  // Member `root`'s `t` to everyone, in place.
  virtual void broadcast(const Tensor& t, int root) = 0;
  virtual Request isend(const Tensor& t, int peer, int tag) = 0;
  virtual Request irecv(const Tensor& t, int peer, int tag) = 0;
  virtual void barrier() = 0;

  // Consistency mode (docs/design.md §9): every member states what global op it is about to run; members
  // that disagree, or do not arrive within the timeout, make every arriving member throw an error
  // naming the op, its sequence number and the ranks.
  virtual void check_consistency(const std::string& what) = 0;
};

// exchange's arguments, checked alike by every communicator that reads them (before anything is
// sent or staged): one tensor for every member in each (0 elements where nothing crosses; this
// member's own are not read), so that every member takes part in all of it, a GPU group's path
// decision included. Throws "[exchange] ...".
void check_exchange_pieces(const std::vector<Tensor>& send, const std::vector<Tensor>& recv, int size, int rank);

}  // namespace globe::dist
