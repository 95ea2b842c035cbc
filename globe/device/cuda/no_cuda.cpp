// The CUDA backend of a build without a CUDA toolkit (CMake compiles this file instead of
// globe/device/cuda/): it reports no devices, and anything that would touch one throws. The
// public entry points check the device first (check_device_usable), so these throws are a guard.
#include "globe/base/error.h"
#include "globe/device/cuda/runtime.h"

namespace globe::cuda {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  GLOBE_FAIL("[", what, "] this build has no CUDA (configure with a CUDA toolkit: cmake -DGLOBE_CUDA=ON)");
}
}  // namespace

bool built() { return false; }
int device_count() { return 0; }
std::string no_device_reason() { return "this build has no CUDA"; }
void* allocate(int, size_t) { no_cuda("alloc"); }
void release(int, void*) { no_cuda("alloc"); }
size_t cached_bytes(int) { return 0; }
void empty_cache(int) {}
void copy(int, void*, bool, const void*, bool, size_t) { no_cuda("copy"); }
void copy_peer(int, void*, int, const void*, size_t) { no_cuda("copy"); }
void zero(int, void*, size_t) { no_cuda("zero"); }
void* compute_stream(int) { no_cuda("stream"); }
void synchronize(int) { no_cuda("stream"); }
void* event_create(int) { no_cuda("event"); }
void event_destroy(void*) {}
void event_record(void*, void*) { no_cuda("event"); }
void stream_wait_event(void*, void*) { no_cuda("event"); }
void event_synchronize(void*) { no_cuda("event"); }
bool event_done(void*) { no_cuda("event"); }

}  // namespace globe::cuda
