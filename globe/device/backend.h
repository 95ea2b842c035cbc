// A kind of device other than the CPU, as the device layer sees it: memory, copies to and from the
// host, streams and events. Each kind lives in its own folders (globe/<layer>/<kind>/) and registers
// one backend here; the kinds a build has come from CMake's list (GLOBE_DEVICE_KINDS), each named by
// its folder. Device, memory.h and stream.h look the kind up here, so nothing outside a kind's
// folders names it. Internals of the device layer: programs use device.h, memory.h and stream.h.
//
// Adding a kind K to Globe: globe/device/K/registration.cpp defines globe::K::make_backend() (and the
// kernels and dist layers' K/ folders their parts: kernels::K::table(), dist's group
// communicator), its no_K.cpp stubs for a build without its toolkit, and one CMake option.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "globe/device/device.h"

namespace globe {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // The kind's name in "cuda:1" and placement("cuda", ...); its label in messages ("CUDA").
  virtual const char* name() const = 0;
  virtual const char* label() const = 0;
  // Whether this build has the kind's runtime (its toolkit was found), and if not the advice that
  // completes "this build has no CUDA (...)".
  virtual bool built() const = 0;
  virtual std::string build_hint() const = 0;
  // Devices of this kind the process sees, and the runtime's words for why there are none.
  virtual int count() const = 0;
  virtual std::string no_device_reason() const = 0;
  // Whether its devices count as accelerators (the machine report's "gpus"); a test device does not.
  virtual bool accelerator() const { return true; }

  // Memory: `nbytes` on device `index` (the backend may cache), its release, bytes cached for
  // reuse and their release. copy: n bytes between host and device `index` (host_dst / host_src
  // mark the host side; a copy to the host has landed when it returns); copy_peer between two
  // devices of this kind; zero: fill with zero bytes.
  virtual void* allocate(int index, size_t nbytes) = 0;
  virtual void release(int index, void* p) = 0;
  virtual size_t cached_bytes(int index) const = 0;
  virtual void empty_cache(int index) = 0;
  virtual void copy(int index, void* dst, bool host_dst, const void* src, bool host_src, size_t n) = 0;
  virtual void copy_peer(int dst_index, void* dst, int src_index, const void* src, size_t n) = 0;
  virtual void zero(int index, void* p, size_t n) = 0;

  // Streams and events, as opaque handles (stream.h).
  virtual void* compute_stream(int index) = 0;
  virtual void synchronize(int index) = 0;
  virtual void* event_create(int index) = 0;
  virtual void event_destroy(void* event) = 0;
  virtual void event_record(void* event, void* stream) = 0;
  virtual void stream_wait_event(void* stream, void* event) = 0;
  virtual void event_synchronize(void* event) = 0;
  virtual bool event_done(void* event) = 0;
};

// How many kinds a process holds, the CPU included: the registry's room, memory.cpp's counters
// and the kernels' registered tables are sized by it.
inline constexpr size_t kMaxDeviceKinds = 9;

// Registers a kind at run time, after the built-in ones (a test's device, a plugin's): returns its
// DeviceType; "[device] ..." for a name taken or malformed, or past the 8 kinds Globe holds. Call
// it before other threads use devices. Its kernel table goes to kernels::register_kernel_table,
// and its collectives are host-staged. Built-in kinds come from CMake's list instead.
DeviceType register_device_kind(std::unique_ptr<DeviceBackend> backend);
// How many kinds the build registered itself, the CPU included (the first DeviceTypes).
size_t built_in_device_kinds();

// The backend of a kind other than the CPU (a programming error for the CPU, which has none).
DeviceBackend& backend_of(DeviceType type);
// Every kind the build has, the CPU first: DeviceType(i) is the i-th.
const std::vector<std::string>& device_type_names();
// The kind named `name`, if the build has one by that name.
std::optional<DeviceType> find_device_type(std::string_view name);
// The kinds' names for messages: "cpu, cuda".
std::string device_type_list();

}  // namespace globe
