#pragma once

#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <chrono>
#include <optional>

namespace lpbench::timing {

// Times one step of work on a device: events on the device's current stream for a GPU, the
// host's steady clock on the CPU. On a GPU what the host did before start() is not counted, but
// once the start event is queued the GPU's wait for the host's next launches is: a step after a
// synchronized one starts on an idle GPU, so its first launches are timed as a training loop that
// synchronizes every step would pay them (a CUDA graph's replay pays almost none).
class StepTimer {
 public:
  explicit StepTimer(const c10::Device& device);
  void start();
  // Marks the end of the timed work (the stop event queued after it); the host is free to do
  // other work, untimed, while the device finishes.
  void stop();
  // Waits for the device to finish the timed work; returns milliseconds from start() to stop().
  double elapsed_ms();
  double stop_ms() {
    stop();
    return elapsed_ms();
  }

 private:
  c10::Device device_;
  std::optional<c10::Event> start_event_, stop_event_;
  std::chrono::steady_clock::time_point host_start_, host_stop_;
};

}  // namespace lpbench::timing
