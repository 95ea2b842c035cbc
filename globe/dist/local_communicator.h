// The communicator of a group of one: every collective is a local copy, no MPI involved.
#pragma once

#include "globe/dist/communicator.h"

namespace globe::dist {

class LocalCommunicator final : public Communicator {
 public:
  explicit LocalCommunicator(int world_rank) : ranks_{world_rank} {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::vector<int>& world_ranks() const override { return ranks_; }
  void all_reduce_sum(const Tensor&) override {}
  Request start_all_reduce_sum(const Tensor&) override { return Request(); }
  void all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>&) override;
  void reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>&) override;
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>&, const Tensor& recv,
                    const std::vector<int64_t>&) override;
  void exchange(const std::vector<Tensor>&, const std::vector<Tensor>&) override {}
  void broadcast(const Tensor&, int) override {}
  Request isend(const Tensor& t, int peer, int tag) override;
  Request irecv(const Tensor& t, int peer, int tag) override;
  void barrier() override {}
  void check_consistency(const std::string&) override {}

 private:
  std::vector<int> ranks_;
};

}  // namespace globe::dist
