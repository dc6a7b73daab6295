#pragma once

#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <chrono>
#include <optional>

namespace lpbench::timing {

// Times one step of work on a device: events on the device's current stream for a GPU (the
// stream the work is queued on, so host-side queuing is not counted as work), the host's steady
// clock on the CPU.
class StepTimer {
 public:
  explicit StepTimer(const c10::Device& device);
  void start();
  // Waits for the device to finish the timed work; returns milliseconds.
  double stop_ms();

 private:
  c10::Device device_;
  std::optional<c10::Event> start_event_, stop_event_;
  std::chrono::steady_clock::time_point host_start_;
};

}  // namespace lpbench::timing
