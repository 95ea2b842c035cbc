// The CUDA backend's runtime side (compiled only in a CUDA build): device discovery, the caching
// allocator, copies, one compute stream per device, events. Plain C++ over the CUDA runtime API;
// kernels live in globe/kernels/cuda/.
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "globe/base/error.h"
#include "globe/device/cuda/cuda_check.h"
#include "globe/device/cuda/runtime.h"

namespace globe::cuda {

namespace {

// Makes `device` current for the calling thread (cheap when it already is).
void use(int device) {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now == device) return;
  GLOBE_CUDA_CHECK(cudaSetDevice(device), "device");
}

struct DeviceCount {
  int count = 0;
  std::string reason;
};
const DeviceCount& probe() {
  static const DeviceCount found = [] {
    DeviceCount d;
    const cudaError_t err = cudaGetDeviceCount(&d.count);
    if (err != cudaSuccess) {
      d.count = 0;
      d.reason = cudaGetErrorString(err);
      (void)cudaGetLastError();  // clear it: later calls must not see it
    } else if (d.count == 0) {
      d.reason = "the CUDA runtime found no device";
    }
    return d;
  }();
  return found;
}

// Blocks below 1 MiB are rounded to 512 bytes, larger ones to 2 MiB (PyTorch's two pools'
// granularity), so a step that allocates the same sizes every time finds them in the cache.
size_t rounded(size_t n) {
  constexpr size_t kSmall = 512, kLarge = size_t(2) << 20;
  if (n < (size_t(1) << 20)) return std::max(kSmall, (n + kSmall - 1) / kSmall * kSmall);
  return (n + kLarge - 1) / kLarge * kLarge;
}

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, void*> free_blocks;    // size -> block, for reuse
  std::unordered_map<void*, size_t> live;      // block -> size, in use by tensors
  size_t cached = 0;
};

Cache& cache(int device) {
  static std::vector<Cache>* caches = new std::vector<Cache>(size_t(std::max(1, probe().count)));
  GLOBE_CHECK(device >= 0 && device < int(caches->size()), "[alloc] cuda:", device, " does not exist");
  return (*caches)[size_t(device)];
}

void free_cached(int device, Cache& c) {
  if (c.free_blocks.empty()) return;
  use(device);
  GLOBE_CUDA_CHECK(cudaDeviceSynchronize(), "alloc");
  for (auto& [size, block] : c.free_blocks) GLOBE_CUDA_CHECK(cudaFree(block), "alloc");
  c.free_blocks.clear();
  c.cached = 0;
}

}  // namespace

bool built() { return true; }
int device_count() { return probe().count; }
std::string no_device_reason() { return probe().reason; }

void* allocate(int device, size_t nbytes) {
  Cache& c = cache(device);
  const size_t size = rounded(nbytes);
  std::lock_guard<std::mutex> lock(c.mutex);
  // The smallest cached block that fits, unless it would waste more than half of itself.
  auto it = c.free_blocks.lower_bound(size);
  if (it != c.free_blocks.end() && it->first <= 2 * size) {
    void* block = it->second;
    c.live.emplace(block, it->first);
    c.cached -= it->first;
    c.free_blocks.erase(it);
    return block;
  }
  use(device);
  void* block = nullptr;
  cudaError_t err = cudaMalloc(&block, size);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    free_cached(device, c);
    err = cudaMalloc(&block, size);
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    (void)cudaMemGetInfo(&free_bytes, &total);
    GLOBE_FAIL("[alloc] out of memory on cuda:", device, ": asked ", nbytes, " bytes, ", free_bytes, " free of ",
               total, " (", cudaGetErrorString(err), ")");
  }
  c.live.emplace(block, size);
  return block;
}

void release(int device, void* p) {
  Cache& c = cache(device);
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.live.find(p);
  GLOBE_CHECK(it != c.live.end(), "[alloc] cuda:", device, " releases a block it did not allocate");
  // Kernels that still read the block run on the compute stream, before anything that reuses it.
  c.free_blocks.emplace(it->second, p);
  c.cached += it->second;
  c.live.erase(it);
}

size_t cached_bytes(int device) {
  Cache& c = cache(device);
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.cached;
}

void empty_cache(int device) {
  Cache& c = cache(device);
  std::lock_guard<std::mutex> lock(c.mutex);
  free_cached(device, c);
}

void* compute_stream(int device) {
  static std::vector<cudaStream_t>* streams = [] {
    auto* s = new std::vector<cudaStream_t>(size_t(std::max(1, probe().count)), nullptr);
    return s;
  }();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  GLOBE_CHECK(device >= 0 && device < int(streams->size()), "[stream] cuda:", device, " does not exist");
  cudaStream_t& s = (*streams)[size_t(device)];
  // Kernels are launched right after asking for their stream: make its device current, so a rank
  // on cuda:1 never launches onto another device's context.
  use(device);
  if (s == nullptr) GLOBE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  return s;
}

void copy(int device, void* dst, bool host_dst, const void* src, bool host_src, size_t n) {
  if (n == 0) return;
  use(device);
  auto stream = static_cast<cudaStream_t>(compute_stream(device));
  const cudaMemcpyKind kind = host_src ? (host_dst ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
                                       : (host_dst ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
  GLOBE_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, kind, stream), "copy");
  // Pageable host memory: the source must stay valid until the copy has read it, and a copy to
  // the host is read right after this returns.
  if (host_dst || host_src) GLOBE_CUDA_CHECK(cudaStreamSynchronize(stream), "copy");
}

void copy_peer(int dst_device, void* dst, int src_device, const void* src, size_t n) {
  if (n == 0) return;
  synchronize(src_device);
  use(dst_device);
  GLOBE_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, n,
                                       static_cast<cudaStream_t>(compute_stream(dst_device))),
                   "copy");
  synchronize(dst_device);
}

void zero(int device, void* p, size_t n) {
  if (n == 0) return;
  use(device);
  GLOBE_CUDA_CHECK(cudaMemsetAsync(p, 0, n, static_cast<cudaStream_t>(compute_stream(device))), "zero");
}

void synchronize(int device) {
  use(device);
  GLOBE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(compute_stream(device))), "stream");
}

void* event_create(int device) {
  use(device);
  cudaEvent_t e = nullptr;
  GLOBE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
  return e;
}

void event_destroy(void* event) {
  if (event != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

void event_record(void* event, void* stream) {
  GLOBE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)), "event");
}

void stream_wait_event(void* stream, void* event) {
  GLOBE_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
                   "event");
}

void event_synchronize(void* event) {
  GLOBE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "event");
}

bool event_done(void* event) {
  const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  GLOBE_CUDA_CHECK(err, "event");
  return true;
}

}  // namespace globe::cuda
