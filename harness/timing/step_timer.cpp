#include "harness/timing/step_timer.h"

#include <c10/core/impl/VirtualGuardImpl.h>

namespace lpbench::timing {

namespace {

c10::Stream current_stream(const c10::Device& device) {
  return c10::impl::VirtualGuardImpl(device.type()).getStream(device);
}

}  // namespace

StepTimer::StepTimer(const c10::Device& device) : device_(device) {
  if (!device_.is_cpu()) {
    // BACKEND_DEFAULT: events that record timing (torch's default disables it).
    start_event_.emplace(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
    stop_event_.emplace(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
  }
}

void StepTimer::start() {
  if (start_event_) {
    start_event_->record(current_stream(device_));
  } else {
    host_start_ = std::chrono::steady_clock::now();
  }
}

void StepTimer::stop() {
  if (stop_event_) {
    stop_event_->record(current_stream(device_));
  } else {
    host_stop_ = std::chrono::steady_clock::now();
  }
}

double StepTimer::elapsed_ms() {
  if (stop_event_) {
    stop_event_->synchronize();
    return start_event_->elapsedTime(*stop_event_);
  }
  return std::chrono::duration<double, std::milli>(host_stop_ - host_start_).count();
}

}  // namespace lpbench::timing
