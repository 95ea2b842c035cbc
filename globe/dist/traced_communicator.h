// The communicator every group of several ranks is used through (runtime.cpp): each collective
// and transfer is a span of kind comm (base/trace.h) with its payload bytes, group and peer, inside
// the module, op and layout change that caused it. With no trace sink listening, a call costs one
// atomic load more than the inner communicator's. Started collectives (start_*, isend, irecv)
// end their span when the request completes, marked in flight.
#pragma once

#include <memory>

#include "globe/dist/communicator.h"

namespace globe::dist {

class TracedCommunicator final : public Communicator {
 public:
  explicit TracedCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  Communicator& inner() { return *inner_; }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::vector<int>& world_ranks() const override { return inner_->world_ranks(); }
  uint64_t collectives_entered() const override { return inner_->collectives_entered(); }

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
  void check_consistency(const std::string& what) override { inner_->check_consistency(what); }

 private:
  std::unique_ptr<Communicator> inner_;
};

}  // namespace globe::dist
