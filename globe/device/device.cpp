#include "globe/device/device.h"

#include <charconv>

#include "globe/base/error.h"
#include "globe/device/cuda_backend.h"

namespace globe {

const char* device_type_name(DeviceType t) { return t == DeviceType::cpu ? "cpu" : "cuda"; }

DeviceType parse_device_type(std::string_view name) {
  if (name == "cpu") return DeviceType::cpu;
  if (name == "cuda") return DeviceType::cuda;
  GLOBE_FAIL("[device] unknown device type '", name, "' (supported: cpu, cuda)");
}

Device Device::parse(std::string_view text) {
  const size_t colon = text.find(':');
  const DeviceType type = parse_device_type(text.substr(0, colon));
  if (colon == std::string_view::npos) return Device(type, 0);
  const std::string_view digits = text.substr(colon + 1);
  int index = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  GLOBE_CHECK(ec == std::errc() && end == digits.data() + digits.size() && !digits.empty() && index >= 0,
              "[device] '", text, "' is not a device: write \"cpu\", \"cuda\" or \"cuda:N\" with N >= 0");
  GLOBE_CHECK(type == DeviceType::cuda || index == 0, "[device] '", text, "': the cpu device has only index 0");
  return Device(type, index);
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

bool cuda_built() { return cuda::built(); }

int cuda_device_count() { return cuda::device_count(); }

void check_device_usable(const Device& d, std::string_view what) {
  if (d.is_cpu()) return;
  GLOBE_CHECK(cuda::built(), what, " ", d.str(), ": this build has no CUDA (configure with a CUDA toolkit: "
              "cmake -DGLOBE_CUDA=ON, or scripts/setup.sh on a machine that has one)");
  const int n = cuda::device_count();
  GLOBE_CHECK(n > 0, what, " ", d.str(), ": no CUDA device visible (", cuda::no_device_reason(), ")");
  GLOBE_CHECK(d.index < n, what, " ", d.str(), " does not exist: ", n, " CUDA device", n == 1 ? "" : "s",
              " visible (cuda:0", n > 1 ? " .. cuda:" + std::to_string(n - 1) : std::string(), ")");
}

}  // namespace globe
