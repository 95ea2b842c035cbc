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

namespace globe::kernels {

namespace host_memory_detail {

inline Tensor with_storage(const Tensor& t, std::shared_ptr<Storage> s) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = t.shape();
  impl->dtype = t.dtype();
  impl->storage = std::move(s);
  impl->strides = t.strides();
  impl->offset = t.offset();
  return Tensor(std::move(impl));
}

// `t` as a host tensor over the same bytes (t itself when it is on the host or undefined).
inline Tensor host_alias(const Tensor& t) {
  if (!t.defined() || t.device().is_cpu()) return t;
  const std::shared_ptr<Storage>& s = t.storage();
  return with_storage(t, std::make_shared<Storage>(s->data, s->nbytes, std::shared_ptr<void>(s)));
}

// A host result copied into `device`'s memory.
inline Tensor on_device(const Tensor& host, const Device& device) {
  if (!host.defined()) return host;
  const Storage& from = *host.storage();
  auto s = std::make_shared<Storage>(from.nbytes, false, device);
  detail::copy_bytes(device, s->data, kCPU, from.data, from.nbytes);
  return with_storage(host, std::move(s));
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

template <class A>
void note_device(Device& found, const A& a) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>)
    if (found.is_cpu() && a.defined() && !a.device().is_cpu()) found = a.device();
}

template <class Guard, auto Entry>
struct OnHost;

template <class Guard, class R, class... A, R (*DeviceKernels::*Entry)(A...)>
struct OnHost<Guard, Entry> {
  static R call(A... args) {
    Device device;
    (note_device(device, args), ...);
    GLOBE_CHECK(!device.is_cpu(), "[kernels] a device's table was called without a tensor on the device");
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
