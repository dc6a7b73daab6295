#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"

// Two ways of launching a kernel besides the plain one, each used where the device has it.
//
// Programmatic dependent launch (compute capability 9.0 and later). A kernel launched with
// launch_after_producer may be scheduled before the kernel ahead of it in the stream has
// finished, and calls wait_for_producer() before it reads what that kernel wrote: the wait
// returns once the producer grid has completed and its writes are visible. A producer that calls
// let_dependents_launch() lets the dependent's blocks take SMs as its own blocks leave them (the
// norm backwards call it first thing, and a call of theirs with its partial sums ran 1-4 %
// faster: docs/perf-log.md §43); one that does not releases the dependent when it ends. Older GPUs
// launch the same kernel plainly, and the two device calls do nothing there.
//
// Cooperative launch: every block of the grid runs at once, so that blocks may wait for each
// other (cooperative_groups' grid sync). The grid must not exceed what the device holds at once
// (resident_grid.cuh's resident_blocks).
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

// What the current device supports (asked once a device), and for cooperative launch whether
// this process allows it: allow_cooperative_launch(false), or LPBENCH_COOPERATIVE_LAUNCH=0 in the
// environment, makes every kernel take its path without a grid sync (the tests and
// fused_ops_bench run both paths so).
struct LaunchModes {
  bool dependent = false;    // programmatic dependent launch
  bool cooperative = false;  // cooperative launch
};
LaunchModes launch_modes();
void allow_cooperative_launch(bool allowed);

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
  config.numAttrs = launch_modes().dependent ? 1 : 0;
  LPBENCH_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...));
}

// Launches `kernel` cooperatively and returns true, or returns false having launched nothing
// where the device has no cooperative launch or refuses this grid as more than it holds at once
// (the caller then takes a path without a grid sync).
template <typename... Params, typename... Args>
bool launch_cooperative(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
                        cudaStream_t stream, Args... args) {
  if (!launch_modes().cooperative) return false;
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
  if (e == cudaErrorCooperativeLaunchTooLarge) {
    (void)cudaGetLastError();  // nothing was launched; the error is not sticky
    return false;
  }
  LPBENCH_CUDA_CHECK(e);
  return true;
}

}  // namespace lpbench::cuda
