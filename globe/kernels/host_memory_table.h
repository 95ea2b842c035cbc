// A kernel table for a device whose memory the host can address (the sim device, a test's device):
// every entry is the CPU table's, reached through the device interface (kernels_on(kCPU)). The
// CPU kernel sees the entry's tensor arguments as host tensors over the same bytes (nothing
// copied: in-place entries write the device's memory) while a `Guard` lives (the device's memory
// made accessible, for a guarded one); a tensor it returns is copied into the device's memory, so
// results live where the op's inputs do, as on a GPU, and equal the CPU's bit for bit.
//
//   const DeviceKernels& table() { return host_memory_table<sim::Open>("sim"); }
#pragma once

#include <tuple>
#include <type_traits>

#include "globe/device/memory.h"
#include "globe/kernels/device_kernels.h"
#include "globe/kernels/entry_args.h"

namespace globe::kernels {

namespace host_memory_detail {

// The elements `t`'s storage holds, as a 1-D extent of t's dtype.
inline Shape storage_extent(const Tensor& t) { return {int64_t(t.storage()->nbytes / itemsize(t.dtype()))}; }

// `t` as a host tensor over the same bytes (t itself when it is on the host or undefined).
inline Tensor host_alias(const Tensor& t) {
  if (!t.defined() || t.device().is_cpu()) return t;
  const std::shared_ptr<Storage>& s = t.storage();
  const Tensor whole = Tensor::from_external(s->data, storage_extent(t), t.dtype(), s);
  return Tensor::view_of(whole, t.shape(), t.strides(), t.offset());
}

// A host result copied into `device`'s memory, its layout kept.
inline Tensor on_device(const Tensor& host, const Device& device) {
  if (!host.defined()) return host;
  const Tensor whole = Tensor::uninitialized(storage_extent(host), host.dtype(), device);
  detail::copy_bytes(device, whole.device_data(), kCPU, host.storage()->data, host.storage()->nbytes);
  return Tensor::view_of(whole, host.shape(), host.strides(), host.offset());
}

// One argument on its way to the CPU kernel.
template <class A>
struct Arg {
  A value;
  A get() { return value; }
  void finish(const Device&) {}
};
template <>
struct Arg<const Tensor&> {
  Tensor alias;
  explicit Arg(const Tensor& t) : alias(host_alias(t)) {}
  const Tensor& get() { return alias; }
  void finish(const Device&) {}
};
template <>
struct Arg<Tensor*> {  // an output: filled by the CPU kernel, then moved to the device
  Tensor* out;
  Tensor local;
  explicit Arg(Tensor* o) : out(o) {}
  Tensor* get() { return out != nullptr ? &local : nullptr; }
  void finish(const Device& d) {
    if (out != nullptr) *out = on_device(local, d);
  }
};

template <class Guard, auto Entry>
struct OnHost;

template <class Guard, class R, class... A, R (*DeviceKernels::*Entry)(A...)>
struct OnHost<Guard, Entry> {
  static R call(A... args) {
    const Tensor* first = first_tensor(args...);
    GLOBE_CHECK(first != nullptr && !first->device().is_cpu(),
                "[kernels] a device's table was called without a tensor on the device");
    const Device device = first->device();
    [[maybe_unused]] const Guard open;
    const DeviceKernels& cpu = kernels_on(kCPU);
    std::tuple<Arg<A>...> host{Arg<A>{std::forward<A>(args)}...};
    auto finish = [&] { std::apply([&](auto&... a) { (a.finish(device), ...); }, host); };
    if constexpr (std::is_void_v<R>) {
      std::apply([&](auto&... a) { (cpu.*Entry)(a.get()...); }, host);
      finish();
    } else {
      R r = std::apply([&](auto&... a) { return (cpu.*Entry)(a.get()...); }, host);
      finish();
      if constexpr (std::is_same_v<R, Tensor>) return on_device(r, device);
      else return r;
    }
  }
};

}  // namespace host_memory_detail

// The table, made once per Guard type; `name` is its device_name.
template <class Guard>
const DeviceKernels& host_memory_table(const char* name) {
  using K = DeviceKernels;
#define GLOBE_ON_HOST(entry) .entry = &host_memory_detail::OnHost<Guard, &K::entry>::call,
  static const DeviceKernels t{
      .device_name = name,
      GLOBE_KERNEL_ENTRIES(GLOBE_ON_HOST)
      // The CPU's entries it calls are the dispatcher's, which apply the 16-bit rule there.
      .native_16bit = ~uint64_t(0),
  };
#undef GLOBE_ON_HOST
  return t;
}

}  // namespace globe::kernels
