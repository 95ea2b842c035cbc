// Device: where a tensor's memory lives and its kernels run — the CPU, or one GPU ("cuda:1").
//
//   globe::Device d = globe::Device::parse("cuda:1");   // d.str() == "cuda:1"
//   globe::Device cpu;                                  // the default: "cpu"
//
// The device layer (globe/device/) is the bottom of the library above the error helpers: devices,
// memory per device (device/memory.h), streams and events (device/stream.h). Which backends exist
// is fixed when Globe is built: cuda_built() says whether this build has the CUDA backend, and
// cuda_device_count() how many GPUs the process sees (docs/design.md §16).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace globe {

enum class DeviceType : uint8_t { cpu, cuda };

// "cpu" / "cuda".
const char* device_type_name(DeviceType t);
// "cpu" or "cuda" (OneFlow's and torch's names); anything else throws "[device] unknown device
// type ..." naming the supported ones.
DeviceType parse_device_type(std::string_view name);

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;  // the GPU's ordinal for cuda; always 0 for cpu

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i) : type(t), index(i) {}
  // "cpu", "cpu:0", "cuda" (= cuda:0) or "cuda:N"; throws "[device] ..." on anything else.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  // "cpu" or "cuda:N".
  std::string str() const;

  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

inline constexpr Device kCPU{};
inline Device cuda_device(int index = 0) { return Device(DeviceType::cuda, index); }

// Whether this build has the CUDA backend (configured with a CUDA toolkit).
bool cuda_built();
// GPUs this process sees: 0 in a CPU-only build or where no GPU or driver is visible.
int cuda_device_count();
// Throws unless `d` can hold memory here: in a CPU-only build "this build has no CUDA (configure
// with a CUDA toolkit)"; without a GPU "no CUDA device visible"; past the last GPU "cuda:N does
// not exist (K visible)". `what` starts the message ("[to]", "[placement] ...").
void check_device_usable(const Device& d, std::string_view what);

}  // namespace globe

template <>
struct std::hash<globe::Device> {
  size_t operator()(const globe::Device& d) const { return size_t(d.type) * 1315423911u + size_t(d.index); }
};
