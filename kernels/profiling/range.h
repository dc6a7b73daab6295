#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// Named ranges over lpbench's work, for profilers and without them.
//
// Every range is pushed on the NVTX domain "lpbench" (a Nsight Systems timeline shows step →
// forward / backward / optimizer → layer → attention / mlp → linear → quantize / gemm /
// dequantize with no extra flags, and `ncu --nvtx --nvtx-include` can pick one). With region
// timing on (`lpbench run --regions`), each range also records a pair of CUDA events on the
// current stream (host clock on the CPU), aggregated by key. With allocator naming on (`lpbench
// run --memory-snapshot`), each range names the CUDA caching allocator's records made inside
// it, innermost range first.
namespace lpbench::profiling {

class Range {
 public:
  // `key` names the kind of region and is what timings aggregate by ("gemm"); `detail`, when
  // given, is appended for the timeline only ("gemm layers.3.mlp.down fprop").
  explicit Range(std::string_view key, std::string_view detail = {});
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  int64_t slot_ = -1;               // index of this range's timing record, or -1
  bool names_allocations_ = false;  // pushed its name as the allocator's context
};

// Turns region timing on or off for work on `device` (process-wide).
void set_region_timing(bool enabled, const c10::Device& device);
bool region_timing();

// Turns allocator naming on or off (process-wide): while on, each range that begins pushes
// "key detail" as the CUDA caching allocator's context, which the allocator's recorded history
// keeps with every allocation, free and mapping made inside the range (torch's "compile
// context", recorded when the history is started with it). No effect without CUDA.
void set_allocator_naming(bool enabled);

struct RegionTime {
  std::string key;
  int64_t calls = 0;
  double total_ms = 0.0;
};

// Waits for the device, and returns the time of each region key since the last call, in order of
// first appearance; clears the records.
std::vector<RegionTime> take_region_times();

// Forgets the records since the last take (e.g. a warm-up step's).
void discard_region_times();

}  // namespace lpbench::profiling
