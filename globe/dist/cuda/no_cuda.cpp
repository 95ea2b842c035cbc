// A CPU-only build's group communicator: MPI, with the staging wrapper that passes host tensors
// straight through (no GPU tensor can exist in this build).
#include "globe/dist/group_communicator.h"
#include "globe/dist/staged_communicator.h"

namespace globe::dist {

std::unique_ptr<Communicator> make_group_communicator(std::unique_ptr<MpiCommunicator> mpi) {
  return std::make_unique<HostStagedCommunicator>(std::move(mpi), "this build has no CUDA");
}

}  // namespace globe::dist
