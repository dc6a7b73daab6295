#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>

namespace lpbench::runner {

// The caching allocator's figures for a GPU; nothing on the CPU, which reports none.
class DeviceMemory {
 public:
  // Starts the device's runtime: the allocator answers no queries before it.
  explicit DeviceMemory(const c10::Device& device);
  bool available() const { return !device_.is_cpu(); }
  int64_t allocated_bytes() const;
  int64_t peak_allocated_bytes() const;
  int64_t peak_reserved_bytes() const;
  void reset_peaks() const;
  // Returns cached blocks to the device, after a run ends or fails.
  void release_cached() const;

 private:
  c10::Device device_;
};

inline double to_gib(int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

}  // namespace lpbench::runner
