// The "cuda" kind's DeviceBackend (device/backend.h) over runtime.h's functions: the CUDA runtime in
// a CUDA build (runtime.cpp), the stubs of a build without a toolkit (no_cuda.cpp). Built either
// way, so "cuda" is always a known kind whose errors say what is missing.
#include "globe/device/backend.h"
#include "globe/device/cuda/runtime.h"

namespace globe::cuda {

namespace {

class CudaBackend final : public DeviceBackend {
 public:
  const char* name() const override { return "cuda"; }
  const char* label() const override { return "CUDA"; }
  bool built() const override { return cuda::built(); }
  std::string build_hint() const override {
    return "configure with a CUDA toolkit: cmake -DGLOBE_CUDA=ON, or scripts/setup.sh on a machine that has one";
  }
  int count() const override { return cuda::device_count(); }
  std::string no_device_reason() const override { return cuda::no_device_reason(); }

  void* allocate(int index, size_t nbytes) override { return cuda::allocate(index, nbytes); }
  void release(int index, void* p) override { cuda::release(index, p); }
  size_t cached_bytes(int index) const override { return cuda::cached_bytes(index); }
  void empty_cache(int index) override { cuda::empty_cache(index); }
  void copy(int index, void* dst, bool host_dst, const void* src, bool host_src, size_t n) override {
    cuda::copy(index, dst, host_dst, src, host_src, n);
  }
  void copy_peer(int dst_index, void* dst, int src_index, const void* src, size_t n) override {
    cuda::copy_peer(dst_index, dst, src_index, src, n);
  }
  void zero(int index, void* p, size_t n) override { cuda::zero(index, p, n); }

  void* compute_stream(int index) override { return cuda::compute_stream(index); }
  void synchronize(int index) override { cuda::synchronize(index); }
  void* event_create(int index) override { return cuda::event_create(index); }
  void event_destroy(void* event) override { cuda::event_destroy(event); }
  void event_record(void* event, void* stream) override { cuda::event_record(event, stream); }
  void stream_wait_event(void* stream, void* event) override { cuda::stream_wait_event(stream, event); }
  void event_synchronize(void* event) override { cuda::event_synchronize(event); }
  bool event_done(void* event) override { return cuda::event_done(event); }
};

}  // namespace

std::unique_ptr<DeviceBackend> make_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace globe::cuda
