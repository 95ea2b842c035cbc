// The communicator of a group of several ranks (runtime.cpp makes one per group). Host tensors and
// host metadata (shapes, fingerprints, consistency checks) go over MPI. A device kind may register
// a communicator of its own for its tensors' collectives (dist/<kind>/: the "cuda" kind's carries
// them over NCCL where it can); every other device's tensors are staged through the host over MPI
// (staged_communicator.h), as are point-to-point transfers, which carry tags.
#pragma once

#include <memory>

#include "globe/dist/mpi_communicator.h"

namespace globe::dist {

// A kind's group communicator over a group's MPI communicator: it carries its kind's tensors and
// hands every other tensor to a HostStagedCommunicator over the same MPI communicator.
using GroupCommunicatorFactory = std::unique_ptr<Communicator> (*)(std::unique_ptr<MpiCommunicator>);

// The group's communicator: the factory of the one kind that registered one (nullptr from
// dist::<kind>::group_communicator_factory() registers none), else host-staged MPI.
std::unique_ptr<Communicator> make_group_communicator(std::unique_ptr<MpiCommunicator> mpi);

}  // namespace globe::dist
