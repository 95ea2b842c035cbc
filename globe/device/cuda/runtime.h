// The CUDA runtime as the device layer uses it. A CUDA build compiles runtime.cpp; a CPU-only build
// compiles no_cuda.cpp instead, whose functions say "this build has no CUDA" (CMake picks one, as
// MLX's no_cuda.cpp stubs). registration.cpp, built either way, turns them into the "cuda" kind's
// DeviceBackend (device/backend.h). Internals of the device layer: programs use device.h,
// memory.h and stream.h.
#pragma once

#include <cstddef>
#include <string>

namespace globe::cuda {

bool built();
// GPUs visible to this process (0 when the driver or the devices are missing).
int device_count();
// Why device_count() is 0: the runtime's own words ("no CUDA-capable device is detected", ...).
std::string no_device_reason();

// The caching allocator (runtime.cpp): blocks are kept for reuse by the next allocation of a
// similar size, so a training step's steady state makes no cudaMalloc / cudaFree. Memory is
// stream-ordered on the device's compute stream. Out of memory, after handing the cache back to
// the driver once, throws "[alloc] out of memory on cuda:N: asked B bytes, F free of T".
void* allocate(int device, size_t nbytes);
void release(int device, void* p);
// Bytes the cache holds for reuse (reserved from the driver, not in use by tensors).
size_t cached_bytes(int device);
// Hands every cached block back to the driver.
void empty_cache(int device);

// Copies n bytes on `device`'s compute stream; host_dst / host_src mark which side is host memory.
// A copy to the host waits for the stream (its bytes are then readable); one from the host returns
// once the source may be reused.
void copy(int device, void* dst, bool host_dst, const void* src, bool host_src, size_t n);
// Copies n bytes from one GPU to another (peer or through the host; both streams are waited).
void copy_peer(int dst_device, void* dst, int src_device, const void* src, size_t n);
void zero(int device, void* p, size_t n);

// Streams and events (cudaStream_t / cudaEvent_t as opaque pointers).
void* compute_stream(int device);
void synchronize(int device);
void* event_create(int device);
void event_destroy(void* event);
void event_record(void* event, void* stream);
void stream_wait_event(void* stream, void* event);
void event_synchronize(void* event);
bool event_done(void* event);

}  // namespace globe::cuda
