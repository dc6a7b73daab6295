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

// The median and p10–p90 of `samples` timings of `calls` back-to-back calls of fn (cycling over
// `copies` inputs) each, divided by `calls`: with calls = 1 each launch pays the host's
// submission latency (the GPU idles from the start event until the first kernel arrives); a
// batch keeps the queue full, as a training step does.
inline Timing time_ms(const std::function<void(int)>& fn, int copies, int samples, int calls = 1) {
  for (int i = 0; i < 5; ++i)
    fn(i % copies);
  cudaEvent_t start, stop;
  LPBENCH_CUDA_CHECK(cudaEventCreate(&start));
  LPBENCH_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < samples; ++i) {
    LPBENCH_CUDA_CHECK(cudaEventRecord(start, nullptr));
    for (int c = 0; c < calls; ++c)
      fn((i * calls + c) % copies);
    LPBENCH_CUDA_CHECK(cudaEventRecord(stop, nullptr));
    LPBENCH_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    LPBENCH_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t / static_cast<float>(calls));
  }
  LPBENCH_CUDA_CHECK(cudaEventDestroy(start));
  LPBENCH_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 10], ms[ms.size() / 2], ms[ms.size() * 9 / 10]};
}

}  // namespace lpbench::tools
