// Collectives on tensors in GPU memory over a communicator that moves host memory (MPI): each GPU
// tensor is copied to the host, the collective runs there, and the results are copied back. What
// carries CUDA tensors between ranks until the NCCL communicator exists, and after that where NCCL
// cannot serve (several ranks on one GPU; a build without NCCL). CPU tensors pass straight through,
// so wrapping every group's communicator costs the CPU path one device check per call.
// The first GPU tensor that crosses says so once on stderr: the path is slow, and a user should
// know which one ran.
#pragma once

#include <memory>

#include "globe/dist/communicator.h"

namespace globe::dist {

class HostStagedCommunicator final : public Communicator {
 public:
  explicit HostStagedCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::vector<int>& world_ranks() const override { return inner_->world_ranks(); }
  uint64_t collectives_entered() const override { return inner_->collectives_entered(); }

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
  void barrier() override { inner_->barrier(); }
  void check_consistency(const std::string& what) override { inner_->check_consistency(what); }

 private:
  std::unique_ptr<Communicator> inner_;
};

}  // namespace globe::dist
