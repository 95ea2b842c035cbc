// The kinds of device this build has: the CPU, then one backend per name in CMake's list
// (GLOBE_DEVICE_KINDS, written to generated/globe/device_kinds.inc as GLOBE_DEVICE_KIND(name)
// lines), each made by its folder's make_backend().
#include <mutex>

#include "globe/base/error.h"
#include "globe/device/backend.h"

#define GLOBE_DEVICE_KIND(kind) \
  namespace globe::kind {       \
  std::unique_ptr<DeviceBackend> make_backend(); \
  }
#include "globe/device_kinds.inc"
#undef GLOBE_DEVICE_KIND

namespace globe {

namespace {

// Room for every kind (kMaxDeviceKinds) without reallocating, so a kind registered at run time
// never moves the names another thread reads.
struct Registry {
  std::vector<std::unique_ptr<DeviceBackend>> backends;  // [0] is the CPU's: none
  std::vector<std::string> names;
  std::mutex mu;  // for registering at run time
};

Registry& registry() {
  static Registry* r = [] {
    auto* out = new Registry;  // never destroyed: devices outlive static destructors
    out->backends.reserve(kMaxDeviceKinds);
    out->names.reserve(kMaxDeviceKinds);
    out->backends.emplace_back();
    out->names.emplace_back("cpu");
#define GLOBE_DEVICE_KIND(kind)                            \
    out->backends.push_back(globe::kind::make_backend()); \
    out->names.emplace_back(out->backends.back()->name());
#include "globe/device_kinds.inc"
#undef GLOBE_DEVICE_KIND
    return out;
  }();
  return *r;
}

}  // namespace

DeviceBackend& backend_of(DeviceType type) {
  const size_t i = size_t(type);
  Registry& r = registry();
  GLOBE_CHECK(i > 0 && i < r.backends.size(), "[device] no backend for device kind #", i);
  return *r.backends[i];
}

const std::vector<std::string>& device_type_names() { return registry().names; }

size_t built_in_device_kinds() {
  size_t n = 1;
#define GLOBE_DEVICE_KIND(kind) ++n;
#include "globe/device_kinds.inc"
#undef GLOBE_DEVICE_KIND
  return n;
}

DeviceType register_device_kind(std::unique_ptr<DeviceBackend> backend) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mu);
  GLOBE_CHECK(backend != nullptr, "[device] register_device_kind: no backend");
  const std::string name = backend->name();
  GLOBE_CHECK(!name.empty() && name.find(':') == std::string::npos && name.find(',') == std::string::npos,
              "[device] register_device_kind: '", name, "' is not a kind's name (no ':' or ',')");
  for (const std::string& n : r.names)
    GLOBE_CHECK(n != name, "[device] register_device_kind: the kind '", name, "' is registered already");
  GLOBE_CHECK(r.names.size() < kMaxDeviceKinds, "[device] register_device_kind: '", name, "' would be kind #",
              r.names.size(), "; Globe holds at most ", kMaxDeviceKinds - 1, " kinds besides the CPU");
  r.backends.push_back(std::move(backend));
  r.names.push_back(name);
  return DeviceType(r.names.size() - 1);
}

}  // namespace globe
