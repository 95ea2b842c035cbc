// The kinds of device this build has: the CPU, then one backend per name in CMake's list
// (GLOBE_DEVICE_KINDS, written to generated/globe/device_kinds.inc as GLOBE_DEVICE_KIND(name)
// lines), each made by its folder's make_backend().
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

struct Registry {
  std::vector<std::unique_ptr<DeviceBackend>> backends;  // [0] is the CPU's: none
  std::vector<std::string> names;
};

const Registry& registry() {
  static const Registry r = [] {
    Registry out;
    out.backends.emplace_back();
    out.names.emplace_back("cpu");
#define GLOBE_DEVICE_KIND(kind)                           \
    out.backends.push_back(globe::kind::make_backend()); \
    out.names.emplace_back(out.backends.back()->name());
#include "globe/device_kinds.inc"
#undef GLOBE_DEVICE_KIND
    GLOBE_CHECK(out.backends.size() <= 255, "[device] too many device kinds");
    return out;
  }();
  return r;
}

}  // namespace

DeviceBackend& backend_of(DeviceType type) {
  const size_t i = size_t(type);
  GLOBE_CHECK(i > 0 && i < registry().backends.size(), "[device] no backend for device kind #", i);
  return *registry().backends[i];
}

const std::vector<std::string>& device_type_names() { return registry().names; }

}  // namespace globe
