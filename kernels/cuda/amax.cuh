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

// The largest of every thread's `mine` in the block, valid in warp 0: the warps reduce by
// shuffle, then warp 0 over the warps' maxima. Every thread of the block calls it (it
// synchronizes), blockDim.x a multiple of 32.
__device__ __forceinline__ uint32_t block_max(uint32_t mine) {
  __shared__ uint32_t warp_max[32];
  const unsigned warp = threadIdx.x >> 5;
  const unsigned lane = threadIdx.x & 31;
  const uint32_t w = __reduce_max_sync(0xffffffffu, mine);
  if (lane == 0) warp_max[warp] = w;
  __syncthreads();
  if (warp != 0) return 0;
  return __reduce_max_sync(0xffffffffu, lane < (blockDim.x >> 5) ? warp_max[lane] : 0u);
}

// Folds this thread's running amax into *amax with one atomic a block (block_max, then thread
// 0). Every thread of the block calls it, with the same `amax`. One atomic a warp was the first
// cut: tens of thousands of atomics on one address serialize in L2 and doubled the SwiGLU
// kernel's time (docs/perf-log.md §10); the launchers also cap their grids when asked for an
// amax (kAmaxGridCap), so that a tensor costs a few thousand atomics at most.
__device__ __forceinline__ void report_amax(uint32_t* amax, uint32_t mine) {
  if (amax == nullptr) return;
  const uint32_t v = block_max(mine);
  if (threadIdx.x == 0 && v != 0) atomicMax(amax, v);
}

// The same for a grid of many short blocks (the one-pass quantize kernel's record: a block a
// 128 × 128 tile, thousands a tensor): a block whose maximum does not exceed what *amax already
// holds leaves it alone. The amax only grows, so a stale read can only send an atomic that was
// not needed, and after the first blocks most send none.
__device__ __forceinline__ void report_amax_if_above(uint32_t* amax, uint32_t mine) {
  const uint32_t v = block_max(mine);
  if (threadIdx.x == 0 && v > *reinterpret_cast<volatile uint32_t*>(amax)) atomicMax(amax, v);
}

// The most blocks a grid-strided producer launches when it reports an amax.
constexpr long long kAmaxGridCap = 2048;

}  // namespace lpbench::cuda
