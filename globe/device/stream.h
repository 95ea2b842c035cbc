// Streams and events: the order of work on a device. Each GPU has one compute stream that every
// kernel and copy of Globe runs on; an Event marks a point in a stream, and another stream (NCCL's
// communication stream) waits for it on the device, without the host waiting. On the CPU work is
// done when the call returns: its stream is a null handle and its events are always complete.
//
//   globe::Event ready(d);
//   ready.record(globe::compute_stream(d));     // after the gradient's kernels
//   ready.wait(comm_stream);                    // the reduction starts after them, host not blocked
#pragma once

#include "globe/device/device.h"

namespace globe {

struct Stream {
  Device device;
  void* handle = nullptr;  // the backend's stream (cudaStream_t); nullptr on the CPU
};

// The device's compute stream (created on first use).
Stream compute_stream(const Device& device);
// Waits on the host until everything queued on the device's compute stream has run.
void synchronize(const Device& device);

class Event {
 public:
  explicit Event(const Device& device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Marks the current end of `stream`.
  void record(const Stream& stream);
  // Makes `stream` wait (on the device) until the marked work has run.
  void wait(const Stream& stream) const;
  // Waits on the host.
  void synchronize() const;
  // Whether the marked work has run (never blocks).
  bool done() const;

 private:
  Device device_;
  void* handle_ = nullptr;  // the backend's event (cudaEvent_t); nullptr on the CPU
};

}  // namespace globe
