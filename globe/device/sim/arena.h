// The "sim" device's memory: host memory kept apart from everything else and guarded, so that
// reading or writing a sim tensor's bytes anywhere but in the device's own kernels and copies
// faults at once instead of quietly working (as host code reading a GPU's memory would fail, or
// worse, read garbage). One reserved region serves every sim device of the process; its pages are
// inaccessible (PROT_NONE) except while an Open lives: the sim kernel table and the backend's
// copies hold one around their work. A fault in the region names the sim device and what to look
// for, then ends the process. Internals of the sim kind's folders (device/sim/registration.cpp,
// kernels/sim/table.cpp).
#pragma once

#include <cstddef>

namespace globe::sim {

// How many "sim" devices a process sees: sim:0 and sim:1, so peer copies are exercised too.
inline constexpr int kDevices = 2;

// A 64-byte aligned block of `nbytes` for device `index` (reused from freed ones of its size
// class); "[alloc] out of memory on sim:N" when the region is spent.
void* allocate(int index, size_t nbytes);
void release(int index, void* p);
// Bytes held by freed blocks of device `index`, kept for reuse; empty_cache gives their pages back
// to the system (the addresses stay reserved, and are reused uncounted).
size_t cached_bytes(int index);
void empty_cache(int index);

// While any Open lives (on any thread), the region is readable and writable.
class Open {
 public:
  Open();
  ~Open();
  Open(const Open&) = delete;
  Open& operator=(const Open&) = delete;
};

// Whether p points into the region (for tests and messages).
bool in_region(const void* p);

}  // namespace globe::sim
