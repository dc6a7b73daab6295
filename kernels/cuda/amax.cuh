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

// Folds this thread's running amax into *amax: the warp's lanes still running agree on one
// value first, so one atomic a warp. Call where the lanes have converged (after their loops).
__device__ __forceinline__ void report_amax(uint32_t* amax, uint32_t mine) {
  if (amax == nullptr) return;
  const unsigned lanes = __activemask();
  const uint32_t warp_max = __reduce_max_sync(lanes, mine);
  if ((threadIdx.x & 31) == static_cast<unsigned>(__ffs(lanes) - 1) && warp_max != 0) {
    atomicMax(amax, warp_max);
  }
}

}  // namespace lpbench::cuda
