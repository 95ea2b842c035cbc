#include "globe/device/memory.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "globe/base/error.h"
#include "globe/base/free_lists.h"
#include "globe/device/backend.h"

namespace globe {

namespace {

struct Counter {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
};

// Slot 0 counts the CPU; each other kind has kMaxDevices slots, its index's.
constexpr int kMaxKinds = int(kMaxDeviceKinds) - 1, kMaxDevices = 64;
Counter g_counters[1 + kMaxKinds * kMaxDevices];

Counter& counter(const Device& d) {
  if (d.is_cpu()) return g_counters[0];
  GLOBE_CHECK(d.index >= 0 && d.index < kMaxDevices && int(d.type) <= kMaxKinds, "[memory] ", d.str(),
              ": Globe counts at most ", kMaxDevices, " devices of each of ", kMaxKinds, " kinds");
  return g_counters[1 + (int(d.type) - 1) * kMaxDevices + d.index];
}

// The device's backend where it has memory to report (a built kind, an existing index).
DeviceBackend* reporting_backend(const Device& d) {
  if (d.is_cpu()) return nullptr;
  DeviceBackend& b = backend_of(d.type);
  return b.built() && d.index < b.count() ? &b : nullptr;
}

void count(const Device& d, int64_t delta) {
  Counter& c = counter(d);
  const int64_t now = c.current.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = c.peak.load(std::memory_order_relaxed);
  while (now > peak && !c.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

// Training allocates and frees the same large buffers every step. glibc's defaults serve them
// with mmap or trim them back to the OS on free, so every step page-faults its memory in again
// (measured: ~4-6 ms of a 17 ms MLP step). Keep freed memory in the heap instead.
void keep_freed_memory_in_heap() {
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
  }();
  (void)done;
}

// GLOBE_MEMORY_LIMIT: bytes of tensor storage this process may hold on each device ("512M",
// "1.5G", "65536"; K, M, G are powers of 1024), 0 or unset for none. Read once.
int64_t memory_limit() {
  static const int64_t limit = [] {
    const char* v = std::getenv("GLOBE_MEMORY_LIMIT");
    if (v == nullptr || *v == 0) return int64_t(0);
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    double scale = 1;
    if (*end == 'K' || *end == 'k') scale = 1024.0, ++end;
    else if (*end == 'M' || *end == 'm') scale = 1024.0 * 1024, ++end;
    else if (*end == 'G' || *end == 'g') scale = 1024.0 * 1024 * 1024, ++end;
    GLOBE_CHECK(end != v && *end == 0 && x >= 0, "[alloc] GLOBE_MEMORY_LIMIT='", v,
                "' is not a byte count (a number with an optional K, M or G: 512M, 1.5G)");
    return int64_t(x * scale);
  }();
  return limit;
}

void check_limit(const Device& device, size_t nbytes) {
  const int64_t limit = memory_limit();
  if (limit == 0) return;
  const int64_t held = counter(device).current.load(std::memory_order_relaxed);
  GLOBE_CHECK(held + int64_t(nbytes) <= limit, "[alloc] out of memory on ", device.str(), ": asked ", nbytes,
              " bytes with ", held, " held, over the limit of ", limit, " bytes (GLOBE_MEMORY_LIMIT)");
}

}  // namespace

MemoryStats memory_stats(const Device& device) {
  const Counter& c = counter(device);
  MemoryStats m{c.current.load(), c.peak.load(), c.current.load()};
  if (DeviceBackend* b = reporting_backend(device)) m.reserved_bytes += int64_t(b->cached_bytes(device.index));
  return m;
}

void reset_peak_memory(const Device& device) {
  Counter& c = counter(device);
  c.peak.store(c.current.load());
}

void empty_cache(const Device& device) {
  if (DeviceBackend* b = reporting_backend(device)) b->empty_cache(device.index);
}

namespace detail {

void* allocate(const Device& device, size_t nbytes, bool zero) {
  check_limit(device, nbytes);
  void* data = nullptr;
  if (device.is_cpu()) {
    keep_freed_memory_in_heap();
    // Small blocks come back from this thread's free lists (base/free_lists.h).
    data = take_block(BlockSource::aligned64, nbytes);
    if (data == nullptr) data = std::aligned_alloc(64, kept_block_bytes(nbytes));
    GLOBE_CHECK(data != nullptr, "[alloc] out of memory allocating ", nbytes, " bytes");
    if (zero) std::memset(data, 0, kept_block_bytes(nbytes));
  } else {
    check_device_usable(device, "[alloc]");
    DeviceBackend& b = backend_of(device.type);
    data = b.allocate(device.index, std::max<size_t>(nbytes, 1));
    if (zero) b.zero(device.index, data, nbytes);
  }
  count(device, int64_t(nbytes));
  return data;
}

void release(const Device& device, void* p, size_t nbytes) {
  count(device, -int64_t(nbytes));
  if (device.is_cpu()) {
    if (!keep_block(BlockSource::aligned64, p, nbytes)) std::free(p);
  } else {
    backend_of(device.type).release(device.index, p);
  }
}

void copy_bytes(const Device& dst_device, void* dst, const Device& src_device, const void* src, size_t n) {
  if (n == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, n);
  } else if (!dst_device.is_cpu() && !src_device.is_cpu()) {
    GLOBE_CHECK(dst_device.type == src_device.type, "[copy] from ", src_device.str(), " to ", dst_device.str(),
                ": devices of two kinds exchange bytes through the host");
    DeviceBackend& b = backend_of(dst_device.type);
    if (dst_device.index == src_device.index) b.copy(dst_device.index, dst, false, src, false, n);
    else b.copy_peer(dst_device.index, dst, src_device.index, src, n);
  } else {
    const Device& dev = dst_device.is_cpu() ? src_device : dst_device;
    backend_of(dev.type).copy(dev.index, dst, dst_device.is_cpu(), src, src_device.is_cpu(), n);
  }
}

}  // namespace detail

}  // namespace globe
