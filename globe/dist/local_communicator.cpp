#include "globe/dist/local_communicator.h"

#include <cstring>

namespace globe::dist {

namespace {
void copy_bytes(const Tensor& dst, const Tensor& src) {
  GLOBE_CHECK(dst.numel() == src.numel() && dst.dtype() == src.dtype(), "[comm] local copy of ",
              describe(src), " into ", describe(dst));
  if (src.numel() > 0) std::memcpy(dst.raw_data(), src.raw_data(), src.numel() * itemsize(src.dtype()));
}
}  // namespace

void LocalCommunicator::all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>&) {
  copy_bytes(out, local);
}

void LocalCommunicator::reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>&) {
  copy_bytes(out, in);
}

void LocalCommunicator::all_to_all_v(const Tensor& send, const std::vector<int64_t>&, const Tensor& recv,
                                     const std::vector<int64_t>&) {
  copy_bytes(recv, send);
}

Request LocalCommunicator::isend(const Tensor&, int, int) {
  GLOBE_FAIL("[send] a rank cannot send to itself");
}

Request LocalCommunicator::irecv(const Tensor&, int, int) {
  GLOBE_FAIL("[recv] a rank cannot receive from itself");
}

}  // namespace globe::dist
