// The communicator of a group of several ranks (runtime.cpp makes one per group). Host tensors and
// host metadata (shapes, fingerprints, consistency checks) go over MPI. GPU tensors' collectives go
// over NCCL where the build has it and NCCL can serve the group (dist/cuda/nccl_communicator.cpp),
// else host-staged over MPI (staged_communicator.h): decided by every member together at the first
// GPU tensor and said once on stderr. GPU point-to-point transfers (isend/irecv, the pipeline's)
// stay host-staged: they carry tags, which NCCL does not, and a receive posted before its send
// would block NCCL's stream. A CPU-only build (dist/cuda/no_cuda.cpp) wraps MPI only.
#pragma once

#include <memory>

#include "globe/dist/mpi_communicator.h"

namespace globe::dist {

std::unique_ptr<Communicator> make_group_communicator(std::unique_ptr<MpiCommunicator> mpi);

}  // namespace globe::dist
