#pragma once

// mbarriers (64-bit barrier objects in shared memory) and the bulk copies that signal them, as
// inline PTX: the wgmma GEMM's stage ring (wgmma_ptx.cuh) and the loss kernel's rows
// (cross_entropy.cu) wait on them. Device code for sm_90 and later: callers compiled for other
// architectures leave them uncalled.
#include <cstdint>

namespace lpbench::cuda::sm90 {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}

// Makes the initialised barriers visible to the other threads and to the async proxy (TMA).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// One arrival that also announces `bytes` of TMA transactions for the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

// One arrival (release semantics: this thread's earlier shared-memory writes and reads are
// ordered before it for whoever waits on the phase).
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// One arrival on the barrier at the same offset in CTA `cta` of this cluster. The default
// semantics (release, CTA scope) as CUTLASS's cluster barriers use: what it orders are this warp's
// wgmma reads of the stage, already complete (wgmma.wait_group). An explicit .release.cluster
// compiles to MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR before every arrival and made the clustered
// kernel 35-45 % slower than the plain one (docs/perf-log.md §6d).
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}

// The barrier timeout's trap, called rather than inlined: a trap inline in the consumers' path
// held ptxas to the launch's 168 registers there instead of setmaxnreg's (perf-log §32, §38).
static __device__ __noinline__ void timeout_trap() {
  __trap();
}

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// Waits until the phase of parity `parity` has completed (acquire semantics). A fresh barrier is
// in phase 0, so waiting for parity 1 returns at once: producers start on parity 1. A wait of
// more than 20 s (a wrong arrival count or phase: a deadlock) traps, so a broken pipeline ends
// the launch with an error instead of hanging the process.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  uint32_t spins = 0;
  uint64_t start = 0;
  while (true) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done != 0) return;
    if ((++spins & 1023u) == 0) {
      const uint64_t now = global_ns();
      if (start == 0) {
        start = now;
      } else if (now - start > 20000000000ull) {
#if defined(LPBENCH_WGMMA_NO_TRAP)
        // Timing experiment (docs/perf-log.md §33): the timeout leaves the wait instead of
        // trapping, which let ptxas give the consumers setmaxnreg's registers (§32) before the
        // trap became a call (§38). Results after a timeout are wrong and nothing reports it;
        // never a shipped build.
        return;
#else
        timeout_trap();
#endif
      }
    }
  }
}

// Orders this thread's earlier generic-proxy accesses of shared memory (ordinary loads and stores)
// before its later async-proxy ones (the bulk copies below): a copy into a buffer that threads
// have just read.
__device__ __forceinline__ void fence_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// `bytes` contiguous bytes from global memory into shared memory at `dst` (both 16-byte aligned,
// bytes a multiple of 16), signalled on `bar` like tma_load_2d.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes,
                                          uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(bar)
      : "memory");
}

// Asks L2 to fetch `bytes` contiguous bytes of global memory at `src` (16-byte aligned, bytes a
// multiple of 16), for loads to come; nothing waits for it and nothing is written.
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, uint32_t bytes) {
  asm volatile(
      "cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(reinterpret_cast<uint64_t>(src)),
      "r"(bytes)
      : "memory");
}

}  // namespace lpbench::cuda::sm90
