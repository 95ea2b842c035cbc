// Memory per device: the bytes of tensor storage this process holds on each device, current and
// peak (since the last reset), and the allocation, copy and fill primitives Storage uses.
//
//   globe::reset_peak_memory();                 // the CPU; reset_peak_memory(Device::parse("cuda:0")) a GPU
//   ... a training step ...
//   auto m = globe::memory_stats();             // m.peak_bytes - bytes held before = the step's high water
//
// Counts every Storage (local tensors, and the shards of global ones), not MPI's, BLAS's or NCCL's
// own buffers. On a GPU, `reserved_bytes` adds what the caching allocator keeps for reuse.
// GLOBE_MEMORY_LIMIT=BYTES ("512M", "1.5G") caps what a process may hold on each device: an
// allocation past it throws "[alloc] out of memory on cpu: asked B bytes with H held, over the
// limit of L bytes" (how a benchmark asks what fits in a given memory).
#pragma once

#include <cstddef>
#include <cstdint>

#include "globe/device/device.h"

namespace globe {

struct MemoryStats {
  int64_t current_bytes = 0;   // held by tensors now
  int64_t peak_bytes = 0;      // the most held at once since the last reset
  int64_t reserved_bytes = 0;  // current + the allocator's cache (the CPU's is the C heap: = current)
};

MemoryStats memory_stats(const Device& device = kCPU);
// Makes the peak equal to the current bytes.
void reset_peak_memory(const Device& device = kCPU);
// Hands a GPU's cached blocks back to the driver (nothing on the CPU).
void empty_cache(const Device& device);

// ---- Internals, for Storage and kernels: not the user API. ----------------------------------------
namespace detail {
// `nbytes` of 64-byte aligned memory on `device`, zero-filled when `zero`; counted in memory_stats.
void* allocate(const Device& device, size_t nbytes, bool zero);
void release(const Device& device, void* p, size_t nbytes);
// Copies n bytes between any two devices (a copy to the host has landed when this returns).
void copy_bytes(const Device& dst_device, void* dst, const Device& src_device, const void* src, size_t n);
}  // namespace detail

}  // namespace globe
