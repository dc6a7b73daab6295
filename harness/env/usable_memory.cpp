#include "harness/env/usable_memory.h"

#include <unistd.h>

#ifdef LPBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace lpbench::env {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kCudaContextGiB = 1.0;  // context, kernels' modules, NCCL: outside the allocator
}  // namespace

double usable_memory_gib([[maybe_unused]] const c10::Device& device) {
#ifdef LPBENCH_TORCH_CUDA
  if (device.is_cuda()) {
    const auto* props = at::cuda::getDeviceProperties(device.index());
    return static_cast<double>(props->totalGlobalMem) / kGiB - kCudaContextGiB;
  }
#endif
  const double ram =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  return 0.8 * ram / kGiB;
}

}  // namespace lpbench::env
