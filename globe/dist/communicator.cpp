#include "globe/dist/communicator.h"

namespace globe::dist {

void check_exchange_pieces(const std::vector<Tensor>& send, const std::vector<Tensor>& recv, int size, int rank) {
  GLOBE_CHECK(int(send.size()) == size && int(recv.size()) == size, "[exchange] ", send.size(), " send and ",
              recv.size(), " receive tensors for ", size, " members");
  for (int s = 0; s < size; ++s)
    GLOBE_CHECK(s == rank || (send[size_t(s)].defined() && recv[size_t(s)].defined()), "[exchange] member ", rank,
                " has no ", send[size_t(s)].defined() ? "receive" : "send", " tensor for member ", s,
                ": pass an empty one (0 elements) where nothing crosses");
}

}  // namespace globe::dist
