#pragma once

#include <c10/core/Device.h>

#include <string>

namespace lpbench::timing {

// Whether this libtorch can capture traces (it was built with kineto).
bool profiler_available();

// Captures one region of work with torch's profiler (kineto: CPU ops, and CUDA kernels on a GPU)
// and saves it as a Chrome/Perfetto trace (JSON).
class TraceCapture {
 public:
  explicit TraceCapture(const c10::Device& device);
  ~TraceCapture();
  TraceCapture(const TraceCapture&) = delete;
  TraceCapture& operator=(const TraceCapture&) = delete;
  // Stops capturing and writes the trace to `path`.
  void save(const std::string& path);

 private:
  bool active_ = false;
};

}  // namespace lpbench::timing
