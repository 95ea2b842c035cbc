// The process's place in the world and the cache of group communicators.
//
// A program started directly is a world of one and never touches MPI. Under globe-launch, mpirun
// or srun, MPI is initialised on first use and finalised at exit.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "globe/dist/communicator.h"

namespace globe::dist {

int world_rank();
int world_size();
// This rank's index among the ranks on its machine (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, else
// LOCAL_RANK, else 0): a "cuda" placement's rank uses GPU local_rank() % GPUs, as OneFlow's does.
int local_rank();
// True when started by a launcher with more than one rank (MPI is in use).
bool is_distributed();

// The communicator of these world ranks, in this order (group rank i = ranks[i]). Created on
// first use — a collective among the members only — and cached. Only members may call it.
Communicator& group(const std::vector<int>& ranks);

// Keeps a send in flight without waiting for its receiver (its tensor stays alive meanwhile): a
// pipeline stage hands its output on and goes on computing. Completed sends are dropped whenever
// another is added; finish_sends() waits for the rest (with the deadline), as exit does.
void send_later(Request send);
void finish_sends();

// What this rank is about to wait for, in the words of the layer that knows ("forward, stage 0 ->
// 1, micro-batch 3"): a timeout names it, and so does a rank stopped by a signal while it waits.
// The scope sets it for its lifetime.
class WaitingFor {
 public:
  explicit WaitingFor(const std::string& what);
  ~WaitingFor();
  WaitingFor(const WaitingFor&) = delete;
  WaitingFor& operator=(const WaitingFor&) = delete;

 private:
  std::string prev_;
};
std::string waiting_for();
// Called by waits: if another rank died of an uncaught exception, say what this rank was waiting
// for (once), while the job is still being stopped.
void check_failure_notice();

// A rank that ends its program normally tells the others, at exit, how many collectives it entered
// on each of its communicators; a rank that still waits for it then fails at once, naming it,
// instead of after the timeout (`if rank == 0: print(x)` on a global tensor: the print is a
// collective the other ranks never enter). Both read what check_failure_notice() received.
// The collectives `rank` had entered on the communicator of `ranks` when it ended its program;
// nothing while it runs.
std::optional<uint64_t> collectives_before_leaving(int rank, const std::vector<int>& ranks);
// Whether `rank` ended its program at least `grace_s` seconds before (what it had sent before
// arrives within that time).
bool left_longer_than(int rank, double grace_s);
// What the errors about such a rank add.
inline constexpr const char* kRanksRanDifferentCollectives =
    "The ranks ran different collectives: printing a global tensor, or numpy() / item() on it, is a collective "
    "every rank of its placement must run";

// Ends this process with `code` after a failure the program has already reported (Python's
// traceback): the other ranks are told first, as for an uncaught C++ exception, so they stop at
// once; no abort, no core, no second report. MPI is not finalised (peers may be mid-collective).
[[noreturn]] void exit_after_failure(int code);

// Marks the process's communication as broken (a collective timed out and cannot be cancelled):
// MPI is then not finalised at exit, which would wait for the missing peers forever.
// `why` completes "rank R ends without MPI_Finalize: ..." at exit (default: a timeout).
void mark_broken(const char* why = nullptr);

// Seconds a blocking communication may wait before it fails (env GLOBE_TIMEOUT, default 300).
double timeout_seconds();
// Whether global ops compare their metadata across ranks first (env GLOBE_CHECK_CONSISTENCY=1).
bool consistency_checks();
void set_consistency_checks(bool on);
// Whether collectives carry divergence fingerprints (fingerprint.h; on unless env
// GLOBE_FINGERPRINTS=0). Every rank must agree: the setting changes what collectives send.
bool fingerprints();
void set_fingerprints(bool on);

}  // namespace globe::dist
