#pragma once

// How the hand-run GPU tools (wgmma_bench, quantize_bench) time a launch: CUDA events around
// each call on the default stream, inputs rotated over `copies` (so that together they exceed
// the L2), 5 warm-up calls, then p10, median and p90 of `samples` calls, in ms.
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "kernels/cuda/check.cuh"

namespace lpbench::tools {

struct Timing {
  double p10 = 0, median = 0, p90 = 0;
};

inline Timing time_ms(const std::function<void(int)>& fn, int copies, int samples) {
  for (int i = 0; i < 5; ++i)
    fn(i % copies);
  cudaEvent_t start, stop;
  LPBENCH_CUDA_CHECK(cudaEventCreate(&start));
  LPBENCH_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < samples; ++i) {
    LPBENCH_CUDA_CHECK(cudaEventRecord(start, nullptr));
    fn(i % copies);
    LPBENCH_CUDA_CHECK(cudaEventRecord(stop, nullptr));
    LPBENCH_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    LPBENCH_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  LPBENCH_CUDA_CHECK(cudaEventDestroy(start));
  LPBENCH_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 10], ms[ms.size() / 2], ms[ms.size() * 9 / 10]};
}

}  // namespace lpbench::tools
