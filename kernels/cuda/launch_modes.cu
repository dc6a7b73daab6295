#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "kernels/cuda/launch_modes.cuh"

namespace lpbench::cuda {

namespace {

std::atomic<bool>& cooperative_allowed() {
  static std::atomic<bool> allowed = [] {
    const char* v = std::getenv("LPBENCH_COOPERATIVE_LAUNCH");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return allowed;
}

}  // namespace

LaunchModes launch_modes() {
  int device = 0;
  LPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<int, LaunchModes> answers;
  LaunchModes modes;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto [it, fresh] = answers.try_emplace(device);
    if (fresh) {
      int major = 0, cooperative = 0;
      LPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
      LPBENCH_CUDA_CHECK(
          cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
      it->second.dependent = major >= 9;
      it->second.cooperative = cooperative != 0;
    }
    modes = it->second;
  }
  modes.cooperative = modes.cooperative && cooperative_allowed().load();
  return modes;
}

void allow_cooperative_launch(bool allowed) {
  cooperative_allowed().store(allowed);
}

}  // namespace lpbench::cuda
