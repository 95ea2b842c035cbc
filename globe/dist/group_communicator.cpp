// Which communicator a group gets: each device kind's dist/<kind>/ folder says whether it brings
// one (group_communicator.h).
#include "globe/dist/group_communicator.h"

#include "globe/dist/staged_communicator.h"

#define GLOBE_DEVICE_KIND(kind)                                 \
  namespace globe::dist::kind {                                 \
  globe::dist::GroupCommunicatorFactory group_communicator_factory(); \
  }
#include "globe/device_kinds.inc"
#undef GLOBE_DEVICE_KIND

namespace globe::dist {

std::unique_ptr<Communicator> make_group_communicator(std::unique_ptr<MpiCommunicator> mpi) {
  static const GroupCommunicatorFactory factory = [] {
    GroupCommunicatorFactory one = nullptr;
    const char* owner = nullptr;
    for (const auto& [name, f] : {
#define GLOBE_DEVICE_KIND(kind) std::pair{#kind, kind::group_communicator_factory()},
#include "globe/device_kinds.inc"
#undef GLOBE_DEVICE_KIND
         }) {
      if (f == nullptr) continue;
      GLOBE_CHECK(one == nullptr, "[dist] the device kinds ", owner, " and ", name,
                  " both bring a group communicator: Globe chains at most one");
      one = f, owner = name;
    }
    return one;
  }();
  if (factory != nullptr) return factory(std::move(mpi));
  return std::make_unique<HostStagedCommunicator>(std::move(mpi), "");
}

}  // namespace globe::dist
