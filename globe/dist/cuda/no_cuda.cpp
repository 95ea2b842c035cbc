// A build without CUDA: the "cuda" kind brings no group communicator (no GPU tensor can exist).
#include "globe/dist/group_communicator.h"

namespace globe::dist::cuda {

GroupCommunicatorFactory group_communicator_factory() { return nullptr; }

}  // namespace globe::dist::cuda
