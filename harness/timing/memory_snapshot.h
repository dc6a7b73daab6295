#pragma once

#include <c10/core/Device.h>

#include <string>

namespace lpbench::timing {

// Whether this build can record the CUDA caching allocator's history (torch with CUDA).
bool memory_snapshot_available();

// Records what the CUDA caching allocator does over one region of work (every allocation and
// free, and every mapping, unmapping or release of device memory, each named by the innermost
// lpbench range it happened in: profiling::set_allocator_naming) and saves it with the
// allocator's state at the end as torch's pickled memory snapshot, which
// https://pytorch.org/memory_viz and torch.cuda._memory_viz read. No stack traces are gathered:
// the ranges name the work, at a cost the step can bear. A step whose allocation found too
// little free memory shows, in this history, the cached blocks released to retry it.
class MemorySnapshot {
 public:
  explicit MemorySnapshot(const c10::Device& device);
  // Stops recording if save was not called (a step that threw).
  ~MemorySnapshot();
  MemorySnapshot(const MemorySnapshot&) = delete;
  MemorySnapshot& operator=(const MemorySnapshot&) = delete;
  // Stops recording and writes the snapshot to `path`.
  void save(const std::string& path);

 private:
  void stop();
  bool active_ = false;
};

}  // namespace lpbench::timing
