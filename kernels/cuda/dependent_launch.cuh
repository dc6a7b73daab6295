#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"

// Programmatic dependent launch (compute capability 9.0 and later). A kernel launched with
// launch_after_producer may be scheduled before the kernel ahead of it in the stream has
// finished, and calls wait_for_producer() before it reads what that kernel wrote: the wait
// returns once the producer grid has completed and its writes are visible. A producer that calls
// let_dependents_launch() lets the dependent's blocks take SMs as its own blocks leave them (the
// norm backwards call it first thing, and a call of theirs with its partial sums ran 1-4 %
// faster: docs/perf-log.md §43); one that does not releases the dependent when it ends. Older GPUs
// launch the same kernel plainly, and the two device calls do nothing there.
namespace lpbench::cuda {

__device__ __forceinline__ void wait_for_producer() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void let_dependents_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether the current device overlaps a dependent launch with its producer (asked once a device).
bool dependent_launch_supported();

template <typename... Params, typename... Args>
void launch_after_producer(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
                           cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = dependent_launch_supported() ? 1 : 0;
  LPBENCH_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...));
}

}  // namespace lpbench::cuda
