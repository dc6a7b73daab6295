#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <vector>

#include "kernels/cuda/wgmma_gemm.cuh"

// The timed choice of a wgmma config (WgmmaChoice::timed in wgmma_gemm.cuh): kept per device and
// problem for the life of the process. Host code, used by the launcher in wgmma_gemm.cu.
namespace lpbench::cuda {

// The config timed fastest for `problem` on `device`, if it has been timed.
std::optional<WgmmaConfig> timed_wgmma_config(int device, const WgmmaProblem& problem);

// Runs `launch` with each of `candidates` on `stream` (one launch to warm up, then three back to
// back between two events), keeps the fastest for (`device`, `problem`) and returns it. Waits for
// the stream. A launch that throws stops the timing and its error propagates.
WgmmaConfig time_wgmma_candidates(int device, const WgmmaProblem& problem,
                                  const std::vector<WgmmaConfig>& candidates, cudaStream_t stream,
                                  const std::function<void(const WgmmaConfig&)>& launch);

}  // namespace lpbench::cuda
