// Device: where a tensor's memory lives and its kernels run — the CPU, or one device of another
// kind the build has ("cuda:1").
//
//   globe::Device d = globe::Device::parse("cuda:1");   // d.str() == "cuda:1"
//   globe::Device cpu;                                  // the default: "cpu"
//
// The device layer (globe/device/) is the bottom of the library above the error helpers: devices,
// memory per device (device/memory.h), streams and events (device/stream.h). The kinds other than
// the CPU are backends registered by their own folders (device/backend.h); which ones a build has
// is fixed when Globe is built: device_built("cuda") says whether this one has it, and
// device_count("cuda") how many such devices the process sees (docs/design.md §16).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace globe {

// A kind of device: the CPU (0), or the i-th kind the build registered (device/backend.h).
enum class DeviceType : uint8_t { cpu = 0 };

// "cpu", "cuda", ...: the kind's name.
const char* device_type_name(DeviceType t);
// The kind named `name` ("cpu", "cuda", as OneFlow and torch name them); anything else throws
// "[device] unknown device type ..." naming the kinds this build has.
DeviceType parse_device_type(std::string_view name);

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;  // the device's ordinal within its kind; always 0 for cpu

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i) : type(t), index(i) {}
  // "cpu", "cpu:0", "cuda" (= cuda:0) or "cuda:N"; throws "[device] ..." on anything else.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  // "cpu" or "cuda:N".
  std::string str() const;

  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

inline constexpr Device kCPU{};

// Whether this build has the kind named `kind` (the CPU always; "cuda" where a CUDA toolkit was
// found). False for a name that is no kind at all.
bool device_built(std::string_view kind);
// Devices of that kind this process sees: 0 where the build lacks it or none is visible.
int device_count(std::string_view kind);
// Accelerators this process sees, of every kind (the machine report's "gpus"): not the CPU, nor
// the test device "sim" (device/sim/).
int accelerator_count();
// Throws unless `d` can hold memory here: "this build has no CUDA (configure with a CUDA
// toolkit ...)", "no CUDA device visible (...)" or "cuda:N does not exist (K visible)". `what`
// starts the message ("[to]", "[placement] ...").
void check_device_usable(const Device& d, std::string_view what);

}  // namespace globe

template <>
struct std::hash<globe::Device> {
  size_t operator()(const globe::Device& d) const { return size_t(d.type) * 1315423911u + size_t(d.index); }
};
