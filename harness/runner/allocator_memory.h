#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>

namespace lpbench::runner {

// The memory figures of the allocator that serves the run's device. On a GPU: the CUDA caching
// allocator's. On the CPU: the bytes torch's CPU allocator hands out, counted by a wrapper put in
// front of it when the first AllocatorMemory for the CPU is made (tensor memory, not the
// process's resident set: libraries' own buffers are not seen).
class AllocatorMemory {
 public:
  // Starts the device's runtime (the CUDA allocator answers no queries before it), or installs
  // the CPU count.
  explicit AllocatorMemory(const c10::Device& device);
  int64_t allocated_bytes() const;
  int64_t peak_allocated_bytes() const;
  // What the allocator took from the device at its peak, cache included; none on the CPU, whose
  // allocator keeps no cache.
  std::optional<int64_t> peak_reserved_bytes() const;
  void reset_peaks() const;
  // How many times, since the process began, an allocation found too little free device memory
  // and the allocator released its cached blocks to retry it (the CUDA caching allocator's
  // num_alloc_retries): a step during which this grows also timed that release and the
  // allocations that follow it. Always 0 on the CPU.
  int64_t allocation_retries() const;
  // Returns cached blocks to the device, after a run ends or fails.
  void release_cached() const;

 private:
  c10::Device device_;
};

inline double to_gib(int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

}  // namespace lpbench::runner
