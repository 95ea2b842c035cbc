// The "sim" kind brings no group communicator: its tensors' collectives are staged through the
// host over MPI (dist/staged_communicator.h), the path a GPU takes where NCCL cannot serve, so that
// path runs on every CI run.
#include "globe/dist/group_communicator.h"

namespace globe::dist::sim {

GroupCommunicatorFactory group_communicator_factory() { return nullptr; }

}  // namespace globe::dist::sim
