#include <cuda_runtime.h>

#include <map>
#include <mutex>

#include "kernels/cuda/dependent_launch.cuh"

namespace lpbench::cuda {

bool dependent_launch_supported() {
  int device = 0;
  LPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<int, bool> answers;
  const std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = answers.try_emplace(device, false);
  if (fresh) {
    int major = 0;
    LPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    it->second = major >= 9;
  }
  return it->second;
}

}  // namespace lpbench::cuda
