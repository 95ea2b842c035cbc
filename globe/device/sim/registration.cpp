// The "sim" kind's DeviceBackend (device/backend.h): a device on the CPU that behaves as a separate
// one. Its memory is a guarded region of host memory (arena.h), so host code that reads a sim
// tensor's bytes without copying them to the host faults; its kernels are the CPU's, reached
// through its own table (kernels/sim/table.cpp); its collectives are staged through the host, as a
// GPU's are where NCCL cannot serve. Its work is synchronous: a stream is a name and an event is
// done when recorded. Built in every configuration, so every path that moves a tensor between
// devices, checks that two tensors share one, or stages a collective runs in CI on machines without
// a GPU (docs/design.md §16).
#include <cstring>

#include "globe/device/backend.h"
#include "globe/device/sim/arena.h"

namespace globe::sim {

namespace {

class SimBackend final : public DeviceBackend {
 public:
  const char* name() const override { return "sim"; }
  const char* label() const override { return "sim"; }
  bool built() const override { return true; }
  std::string build_hint() const override { return ""; }
  int count() const override { return kDevices; }
  std::string no_device_reason() const override { return ""; }
  bool accelerator() const override { return false; }

  void* allocate(int index, size_t nbytes) override { return sim::allocate(index, nbytes); }
  void release(int index, void* p) override { sim::release(index, p); }
  size_t cached_bytes(int index) const override { return sim::cached_bytes(index); }
  void empty_cache(int index) override { sim::empty_cache(index); }
  void copy(int, void* dst, bool, const void* src, bool, size_t n) override {
    const Open open;
    std::memcpy(dst, src, n);
  }
  void copy_peer(int, void* dst, int, const void* src, size_t n) override {
    const Open open;
    std::memcpy(dst, src, n);
  }
  void zero(int, void* p, size_t n) override {
    const Open open;
    std::memset(p, 0, n);
  }

  void* compute_stream(int index) override { return &streams_[index]; }
  void synchronize(int) override {}
  void* event_create(int) override { return new char; }
  void event_destroy(void* event) override { delete static_cast<char*>(event); }
  void event_record(void*, void*) override {}
  void stream_wait_event(void*, void*) override {}
  void event_synchronize(void*) override {}
  bool event_done(void*) override { return true; }

 private:
  char streams_[kDevices] = {};  // each device's one stream: its address is the handle
};

}  // namespace

std::unique_ptr<DeviceBackend> make_backend() { return std::make_unique<SimBackend>(); }

}  // namespace globe::sim
