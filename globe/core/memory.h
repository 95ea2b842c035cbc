// Bytes of tensor storage this process holds: current and peak (since the last reset). Counts every
// Storage (local tensors, and the shards of global ones), not MPI's or BLAS's own buffers.
//
//   globe::reset_peak_memory();
//   ... a training step ...
//   auto m = globe::memory_stats();   // m.peak_bytes - bytes held before = the step's high water
#pragma once

#include <cstdint>

namespace globe {

struct MemoryStats {
  int64_t current_bytes = 0;
  int64_t peak_bytes = 0;
};

MemoryStats memory_stats();
// Makes the peak equal to the current bytes.
void reset_peak_memory();

namespace detail {
// Called by Storage on allocation (+) and release (-).
void count_allocation(int64_t delta);
}  // namespace detail

}  // namespace globe
