#include "harness/timing/memory_snapshot.h"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "kernels/profiling/range.h"

#ifdef LPBENCH_TORCH_CUDA
#include <torch/csrc/cuda/memory_snapshot.h>
#endif

namespace lpbench::timing {

bool memory_snapshot_available() {
#ifdef LPBENCH_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

MemorySnapshot::MemorySnapshot(const c10::Device& device) {
  if (!device.is_cuda() || !memory_snapshot_available()) {
    throw std::invalid_argument("a memory snapshot records the CUDA caching allocator: GPU only");
  }
#ifdef LPBENCH_TORCH_CUDA
  // History on, without stack traces (context none), from an empty record; the ranges' names as
  // each entry's context.
  torch::cuda::_record_memory_history(std::string("all"), std::nullopt, "python",
                                      /*max_entries=*/SIZE_MAX, /*clearHistory=*/true,
                                      /*compileContext=*/true);
  profiling::set_allocator_naming(true);
  active_ = true;
#endif
}

MemorySnapshot::~MemorySnapshot() {
  stop();
}

void MemorySnapshot::stop() {
  if (!active_) return;
  active_ = false;
  profiling::set_allocator_naming(false);
#ifdef LPBENCH_TORCH_CUDA
  torch::cuda::_record_memory_history(std::nullopt);
#endif
}

void MemorySnapshot::save(const std::string& path) {
#ifdef LPBENCH_TORCH_CUDA
  // Taken while the history is still on: the snapshot carries the history with the state.
  profiling::set_allocator_naming(false);
  const std::string pickled = torch::cuda::_memory_snapshot_pickled();
  stop();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(pickled.data(), static_cast<std::streamsize>(pickled.size()));
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write the memory snapshot {}", path));
#else
  (void)path;
#endif
}

}  // namespace lpbench::timing
