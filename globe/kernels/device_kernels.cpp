// The dispatcher of the kernel tables: the one file that reaches every device kind's table. Ops
// get its own table from kernels_on; each of its entries picks the device kind's table by the
// tensors it is given and applies the one 16-bit rule (via_float32.h) to entries that table has
// no 16-bit form of.
#include "globe/kernels/device_kernels.h"

#include <atomic>
#include <iterator>

#include "globe/device/backend.h"
#include "globe/device/memory.h"
#include "globe/kernels/cpu/table.h"
#include "globe/kernels/entry_args.h"
#include "globe/kernels/via_float32.h"

// Each device kind's table, in its kernels/<kind>/ folder (device/backend.h lists the kinds).
#define GLOBE_DEVICE_KIND(kind)        \
  namespace globe::kernels::kind {     \
  const DeviceKernels& table();        \
  }
#include "globe/device_kinds.inc"
#undef GLOBE_DEVICE_KIND

namespace globe::kernels {

namespace {
// Kinds registered at run time, by DeviceType.
std::atomic<const DeviceKernels*> g_registered[kMaxDeviceKinds];
}  // namespace

void register_kernel_table(DeviceType type, const DeviceKernels& table) {
  GLOBE_CHECK(size_t(type) >= built_in_device_kinds() && size_t(type) < std::size(g_registered),
              "[kernels] register_kernel_table: ", device_type_name(type),
              " is built in (its table is its kernels/<kind>/ folder's) or unknown");
  g_registered[size_t(type)].store(&table);
}

namespace {

// The table of a device kind: the CPU's, a built-in kind's (in the device layer's order of kinds,
// the same list, after the CPU), or one registered at run time.
const DeviceKernels& table_of(DeviceType type) {
  if (type == DeviceType::cpu) return cpu::table();
  static const DeviceKernels& (*const tables[])() = {
#define GLOBE_DEVICE_KIND(kind) &kind::table,
#include "globe/device_kinds.inc"
#undef GLOBE_DEVICE_KIND
  };
  const size_t i = size_t(type);
  if (i <= std::size(tables)) return tables[i - 1]();
  const DeviceKernels* registered = i < std::size(g_registered) ? g_registered[i].load() : nullptr;
  GLOBE_CHECK(registered != nullptr, "[kernels] ", device_type_name(type),
              ": the kind has no kernel table (register_kernel_table)");
  return *registered;
}

// An entry of the dispatcher's table: the device of its first tensor argument picks the kind's
// table, whose entry runs as it is where it takes 16-bit floats, else through call_via_float32.
template <auto Entry>
struct Dispatch;

template <class R, class... A, R (*DeviceKernels::*Entry)(A...)>
struct Dispatch<Entry> {
  static R call(A... args) {
    const Tensor* first = first_tensor(args...);
    const DeviceKernels& table = table_of(first != nullptr ? first->device().type : DeviceType::cpu);
    if (table.native_16bit & entry_bit<Entry>()) return (table.*Entry)(std::forward<A>(args)...);
    return call_via_float32<R, A...>(table.*Entry, std::forward<A>(args)...);
  }
};

}  // namespace

const DeviceKernels& kernels_on(const Device& device) {
  if (!device.is_cpu()) check_device_usable(device, "[kernels]");
#define GLOBE_DISPATCH(entry) .entry = &Dispatch<&DeviceKernels::entry>::call,
  static const DeviceKernels dispatched{
      .device_name = "dispatch",
      GLOBE_KERNEL_ENTRIES(GLOBE_DISPATCH)
      .native_16bit = ~uint64_t(0),
  };
#undef GLOBE_DISPATCH
  return dispatched;
}

void device_copy(const Tensor& dst, const Tensor& src) { kernels_on(dst.device()).copy_into(dst, src); }

Tensor device_dense(const Tensor& t) { return t.is_contiguous() ? t : device_convert(t, t.dtype()); }

Tensor device_convert(const Tensor& t, DType dtype) {
  Tensor out = Tensor::uninitialized(t.shape(), dtype, t.device());
  device_copy(out, t);
  return out;
}

Tensor copy_to_device(const Tensor& src, const Device& device) {
  const Device from = src.device();
  const Tensor dense = device_dense(src);
  if (from == device) return dense;
  check_device_usable(device, "[to]");
  Tensor out = Tensor::uninitialized(src.shape(), src.dtype(), device);
  detail::copy_bytes(device, out.device_data(), from, dense.device_data(),
                     size_t(dense.numel()) * itemsize(dense.dtype()));
  return out;
}

namespace via_detail {

Tensor widen(const Tensor& t) { return low(t) ? device_convert(t, kFloat32) : t; }

Tensor narrow(const Tensor& t, DType to) {
  return t.defined() && t.dtype() == kFloat32 && to != kFloat32 ? device_convert(t, to) : t;
}

void write_back(const Tensor& dst, const Tensor& src) { device_copy(dst, src); }

}  // namespace via_detail

}  // namespace globe::kernels
