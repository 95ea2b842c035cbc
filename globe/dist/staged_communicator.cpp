#include "globe/dist/staged_communicator.h"

#include <cstdio>

#include "globe/device/memory.h"
#include "globe/dist/runtime.h"
#include "globe/kernels/device_kernels.h"

namespace globe::dist {

namespace {

bool on_host(const Tensor& t) { return t.device().is_cpu(); }

std::string ranks_str(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// t = host's values (nothing when t is the host tensor). Communicator tensors are contiguous.
void copy_back(const Tensor& t, const Tensor& host) {
  if (t.same(host) || on_host(t)) return;
  detail::copy_bytes(t.device(), t.device_data(), kCPU, host.raw_data(), size_t(t.numel()) * itemsize(t.dtype()));
}

// A request whose received host buffer is copied to the device tensor once it completes.
class CopyBackOnCompletion final : public Request::Impl {
 public:
  CopyBackOnCompletion(Request inner, Tensor device_t, Tensor host)
      : inner_(std::move(inner)), device_(std::move(device_t)), host_(std::move(host)) {}
  bool test() override {
    if (!done_ && inner_.test()) finish();
    return done_;
  }
  void wait() override {
    if (done_) return;
    inner_.wait();
    finish();
  }

 private:
  void finish() {
    copy_back(device_, host_);
    done_ = true;
  }
  Request inner_;
  Tensor device_, host_;
  bool done_ = false;
};

}  // namespace

void HostStagedCommunicator::say_once(const Device& d) {
  if (said_ || why_.empty() || (about_ && d.type != *about_)) return;
  said_ = true;
  std::fprintf(stderr, "[globe] rank %d: tensors on %s cross ranks [%s] host-staged over MPI (copied to the host "
               "and back): %s\n", world_rank(), d.str().c_str(), ranks_str(world_ranks()).c_str(), why_.c_str());
}

Tensor HostStagedCommunicator::to_host(const Tensor& t) {
  if (on_host(t)) return t;
  say_once(t.device());
  return kernels::copy_to_device(t, kCPU);
}

Tensor HostStagedCommunicator::host_buffer(const Tensor& t) {
  if (on_host(t)) return t;
  say_once(t.device());
  return Tensor::uninitialized(t.shape(), t.dtype());
}

void HostStagedCommunicator::all_reduce_sum(const Tensor& t) {
  const Tensor h = to_host(t);
  inner_->all_reduce_sum(h);
  copy_back(t, h);
}

Request HostStagedCommunicator::start_all_reduce_sum(const Tensor& t) {
  if (on_host(t)) return inner_->start_all_reduce_sum(t);
  const Tensor h = to_host(t);
  return Request(std::make_shared<CopyBackOnCompletion>(inner_->start_all_reduce_sum(h), t, h));
}

void HostStagedCommunicator::all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  const Tensor h = host_buffer(out);
  inner_->all_gather_v(to_host(local), h, counts);
  copy_back(out, h);
}

Request HostStagedCommunicator::start_all_gather_v(const Tensor& local, const Tensor& out,
                                                   const std::vector<int64_t>& counts) {
  const Tensor h = host_buffer(out);
  return Request(std::make_shared<CopyBackOnCompletion>(inner_->start_all_gather_v(to_host(local), h, counts), out, h));
}

void HostStagedCommunicator::reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  const Tensor h = host_buffer(out);
  inner_->reduce_scatter_v(to_host(in), h, counts);
  copy_back(out, h);
}

void HostStagedCommunicator::all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts,
                                          const Tensor& recv, const std::vector<int64_t>& recv_counts) {
  const Tensor h = host_buffer(recv);
  inner_->all_to_all_v(to_host(send), send_counts, h, recv_counts);
  copy_back(recv, h);
}

void HostStagedCommunicator::exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) {
  check_exchange_pieces(send, recv, size(), rank());
  std::vector<Tensor> hs(send.size()), hr(recv.size());
  for (size_t i = 0; i < send.size(); ++i)
    if (int(i) != rank()) hs[i] = to_host(send[i]), hr[i] = host_buffer(recv[i]);
  inner_->exchange(hs, hr);
  for (size_t i = 0; i < recv.size(); ++i)
    if (int(i) != rank()) copy_back(recv[i], hr[i]);
}

void HostStagedCommunicator::broadcast(const Tensor& t, int root) {
  const Tensor h = rank() == root ? to_host(t) : host_buffer(t);
  inner_->broadcast(h, root);
  copy_back(t, h);
}

Request HostStagedCommunicator::isend(const Tensor& t, int peer, int tag) {
  return inner_->isend(to_host(t), peer, tag);  // the inner request keeps the host copy alive
}

Request HostStagedCommunicator::irecv(const Tensor& t, int peer, int tag) {
  if (on_host(t)) return inner_->irecv(t, peer, tag);
  const Tensor h = host_buffer(t);
  return Request(std::make_shared<CopyBackOnCompletion>(inner_->irecv(h, peer, tag), t, h));
}

}  // namespace globe::dist
