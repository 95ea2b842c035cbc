#include "globe/device/device.h"

#include <charconv>

#include "globe/base/error.h"
#include "globe/device/backend.h"

namespace globe {

const char* device_type_name(DeviceType t) {
  const auto& names = device_type_names();
  GLOBE_CHECK(size_t(t) < names.size(), "[device] no device kind #", int(t));
  return names[size_t(t)].c_str();
}

std::optional<DeviceType> find_device_type(std::string_view name) {
  const auto& names = device_type_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return DeviceType(i);
  return std::nullopt;
}

std::string device_type_list() {
  std::string list;
  for (const std::string& n : device_type_names()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

DeviceType parse_device_type(std::string_view name) {
  if (const auto t = find_device_type(name)) return *t;
  GLOBE_FAIL("[device] unknown device type '", name, "' (supported: ", device_type_list(), ")");
}

Device Device::parse(std::string_view text) {
  const size_t colon = text.find(':');
  const DeviceType type = parse_device_type(text.substr(0, colon));
  if (colon == std::string_view::npos) return Device(type, 0);
  const std::string_view digits = text.substr(colon + 1);
  int index = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  const std::string kind = device_type_name(type == DeviceType::cpu && device_type_names().size() > 1 ? DeviceType(1) : type);
  GLOBE_CHECK(ec == std::errc() && end == digits.data() + digits.size() && !digits.empty() && index >= 0,
              "[device] '", text, "' is not a device: write \"cpu\", \"", kind, "\" or \"", kind, ":N\" with N >= 0");
  GLOBE_CHECK(type != DeviceType::cpu || index == 0, "[device] '", text, "': the cpu device has only index 0");
  return Device(type, index);
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : std::string(device_type_name(type)) + ":" + std::to_string(index);
}

namespace {
// The backend of the kind named `kind`, if the build has one by that name other than the CPU.
const DeviceBackend* find_backend(std::string_view kind) {
  const auto t = find_device_type(kind);
  return t && *t != DeviceType::cpu ? &backend_of(*t) : nullptr;
}
}  // namespace

bool device_built(std::string_view kind) {
  if (kind == "cpu") return true;
  const DeviceBackend* b = find_backend(kind);
  return b != nullptr && b->built();
}

int device_count(std::string_view kind) {
  if (kind == "cpu") return 1;
  const DeviceBackend* b = find_backend(kind);
  return b != nullptr && b->built() ? b->count() : 0;
}

int accelerator_count() {
  int n = 0;
  for (size_t i = 1; i < device_type_names().size(); ++i)
    if (backend_of(DeviceType(i)).accelerator()) n += device_count(device_type_names()[i]);
  return n;
}

void check_device_usable(const Device& d, std::string_view what) {
  if (d.is_cpu()) return;
  const DeviceBackend& b = backend_of(d.type);
  GLOBE_CHECK(b.built(), what, " ", d.str(), ": this build has no ", b.label(), " (", b.build_hint(), ")");
  const int n = b.count();
  GLOBE_CHECK(n > 0, what, " ", d.str(), ": no ", b.label(), " device visible (", b.no_device_reason(), ")");
  GLOBE_CHECK(d.index < n, what, " ", d.str(), " does not exist: ", n, " ", b.label(), " device", n == 1 ? "" : "s",
              " visible (", b.name(), ":0", n > 1 ? std::string(" .. ") + b.name() + ":" + std::to_string(n - 1) : std::string(),
              ")");
}

}  // namespace globe
