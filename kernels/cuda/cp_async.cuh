#pragma once

// cp.async: 4- and 16-byte copies from global into shared memory that run while the thread goes
// on, in commit groups it waits for by count. The kernels that walk rows use them to fetch the
// rows after the current one while it is reduced (rmsnorm.cu, qk_norm_rope.cu), and the MMA GEMM
// to fill its operand ring (scaled_gemm_mma.cu). Beside them, an L1 prefetch (the q/k norms'
// forward asks its RoPE tables ahead with it).
#include <cuda_runtime.h>

#include <cstdint>

namespace lpbench::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Each is a compiler memory barrier too ("memory"): a ring slot a thread read before a copy into
// it, or reads after waiting for one, is not read across it.

// 16 bytes, or (valid false) 16 zero bytes without reading src.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid = true) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Asks for the 128-byte line at p into this SM's L1, without waiting and without a register:
// what a later load of it then finds there.
__device__ __forceinline__ void prefetch_l1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace lpbench::cuda
