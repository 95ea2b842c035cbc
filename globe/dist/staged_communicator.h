// Collectives on tensors in GPU memory over a communicator that moves host memory (MPI): each GPU
// tensor is copied to the host, the collective runs there, and the results are copied back. What
// carries CUDA tensors between ranks where NCCL cannot serve (several ranks on one GPU; a build
// without NCCL; point-to-point transfers, which carry tags: group_communicator.h). CPU tensors pass
// straight through, so wrapping a group's communicator costs the CPU path one device check per call.
// The first GPU tensor that crosses says so once on stderr, with the reason: the path is slow, and
// a user should know which one ran (a group of one rank, whose "collectives" are copies, says
// nothing).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "globe/dist/communicator.h"

namespace globe::dist {

class HostStagedCommunicator final : public Communicator {
 public:
  // `why`: the reason device tensors take this path, said with the first one (of kind `about`
  // only, where given); empty says nothing.
  HostStagedCommunicator(std::unique_ptr<Communicator> inner, std::string why,
                         std::optional<DeviceType> about = std::nullopt)
      : inner_(std::move(inner)), why_(std::move(why)), about_(about) {}

  // A group that chose this path for GPU collectives says why instead (group_communicator.h).
  void set_why(std::string why) {
    why_ = std::move(why);
    said_ = false;
  }

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
  void barrier() override { inner_->barrier(); }
  void check_consistency(const std::string& what) override { inner_->check_consistency(what); }

 private:
  // A host tensor with t's values (t itself on the host), and one to receive into for t.
  Tensor to_host(const Tensor& t);
  Tensor host_buffer(const Tensor& t);
  void say_once(const Device& d);

  std::unique_ptr<Communicator> inner_;
  std::string why_;
  std::optional<DeviceType> about_;
  bool said_ = false;
};

}  // namespace globe::dist
