#pragma once

// The max |x| of a kernel's output, reported by the kernel that writes it, so that a tensorwise
// quantization of that output needs no pass of its own to find it (QuantizeArgs::amax).
//
// Carried as the bits of |x| (sign cleared) compared as unsigned integers, as the quantizer does:
// for non-negative floats the order is the same, and a NaN (sign cleared) compares above +Inf,
// so a NaN anywhere makes the amax NaN.
#include <cuda_runtime.h>

#include <cstdint>

namespace lpbench::cuda {

__device__ __forceinline__ uint32_t amax_bits(float v) {
  return __float_as_uint(v) & 0x7fffffffu;
}

// Folds this thread's running amax into *amax with one atomic a block: the warps reduce by
// shuffle, then warp 0 over the warps' maxima. Every thread of the block calls it (it
// synchronizes), with the same `amax`, and blockDim.x a multiple of 32. One atomic a warp was
// the first cut: tens of thousands of atomics on one address serialize in L2 and doubled the
// SwiGLU kernel's time (docs/perf-log.md §10); the launchers also cap their grids when asked
// for an amax (kAmaxGridCap), so that a tensor costs a few thousand atomics at most.
__device__ __forceinline__ void report_amax(uint32_t* amax, uint32_t mine) {
  if (amax == nullptr) return;
  __shared__ uint32_t warp_max[32];
  const unsigned warp = threadIdx.x >> 5;
  const unsigned lane = threadIdx.x & 31;
  const uint32_t w = __reduce_max_sync(0xffffffffu, mine);
  if (lane == 0) warp_max[warp] = w;
  __syncthreads();
  if (warp == 0) {
    const uint32_t v =
        __reduce_max_sync(0xffffffffu, lane < (blockDim.x >> 5) ? warp_max[lane] : 0u);
    if (lane == 0 && v != 0) atomicMax(amax, v);
  }
}

// The most blocks a grid-strided producer launches when it reports an amax.
constexpr long long kAmaxGridCap = 2048;

}  // namespace lpbench::cuda
