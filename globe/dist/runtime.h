// The process's place in the world and the cache of group communicators.
//
// A program started directly is a world of one and never touches MPI. Under globe-launch, mpirun
// or srun, MPI is initialised on first use and finalised at exit.
#pragma once

#include <vector>

#include "globe/dist/communicator.h"

namespace globe::dist {

int world_rank();
int world_size();
// True when started by a launcher with more than one rank (MPI is in use).
bool is_distributed();

// The communicator of these world ranks, in this order (group rank i = ranks[i]). Created on
// first use — a collective among the members only — and cached. Only members may call it.
Communicator& group(const std::vector<int>& ranks);

// Marks the process's communication as broken (a collective timed out and cannot be cancelled):
// MPI is then not finalised at exit, which would wait for the missing peers forever.
void mark_broken();

// Seconds a blocking communication may wait before it fails (env GLOBE_TIMEOUT, default 300).
double timeout_seconds();
// Whether global ops compare their metadata across ranks first (env GLOBE_CHECK_CONSISTENCY=1).
bool consistency_checks();
void set_consistency_checks(bool on);

}  // namespace globe::dist
