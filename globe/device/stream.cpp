#include "globe/device/stream.h"

#include "globe/device/backend.h"

namespace globe {

Stream compute_stream(const Device& device) {
  if (device.is_cpu()) return {device, nullptr};
  check_device_usable(device, "[stream]");
  return {device, backend_of(device.type).compute_stream(device.index)};
}

void synchronize(const Device& device) {
  if (device.is_cpu()) return;
  check_device_usable(device, "[synchronize]");
  backend_of(device.type).synchronize(device.index);
}

Event::Event(const Device& device) : device_(device) {
  if (device.is_cpu()) return;
  check_device_usable(device, "[event]");
  handle_ = backend_of(device.type).event_create(device.index);
}

Event::~Event() {
  if (handle_ != nullptr) backend_of(device_.type).event_destroy(handle_);
}

void Event::record(const Stream& stream) {
  if (handle_ != nullptr) backend_of(device_.type).event_record(handle_, stream.handle);
}

void Event::wait(const Stream& stream) const {
  if (handle_ != nullptr && stream.handle != nullptr) backend_of(device_.type).stream_wait_event(stream.handle, handle_);
}

void Event::synchronize() const {
  if (handle_ != nullptr) backend_of(device_.type).event_synchronize(handle_);
}

bool Event::done() const { return handle_ == nullptr || backend_of(device_.type).event_done(handle_); }

}  // namespace globe
