#pragma once

// Delayed scaling's amax history on the device (kernels/torch/amax_history.h): `slots` amaxes
// (FP32 bits of |amax|), then the current slot's index. A quantization records into the current
// slot, is scaled by the largest of the others but the next, which it zeroes; then the next slot
// is made the current one.
//
// Eager, the host knows which slot is current (QuantizeArgs::history_current) and the one-pass
// kernel's first CTA writes the next one's index. Replayed from a CUDA graph the host is not
// there to say: the kernel reads the index, and a one-thread launch after it moves the index on
// (advance_ring_kernel; the general path's commit_ring_kernel records and moves on). Why a launch
// of its own: the quantizing kernel cannot tell when the last of its CTAs has read the index, and
// a count of them on one word (the last to count moving the ring on) serialized thousands of
// returning atomics a launch: 0.25 ms more a llama2-7b layer step (docs/perf-log.md §55).
//
// The quantizing kernel reads the ring through the read-only cache: within its launch nobody
// writes the index or the slots it reads (its own slot and the next are written, and left out),
// and a launch's CTAs after the first on an SM find them in L1. Read through L2 instead, every
// warp of every CTA waited an L2 round trip before its first load of X: the 12 quantizations of a
// llama2-7b layer step took 0.037 ms longer (docs/perf-log.md §55).
#include <cuda_runtime.h>

#include <cstdint>

namespace lpbench::cuda {

// Where a quantization stands in the ring: the slot it records into, and the one it zeroes.
struct RingTurn {
  int64_t current, next;
};

__device__ __forceinline__ RingTurn ring_turn_at(int64_t current, int64_t slots) {
  return {current, current + 1 == slots ? 0 : current + 1};
}

// The turn the ring's index says.
__device__ __forceinline__ RingTurn ring_turn(const uint32_t* ring, int64_t slots) {
  return ring_turn_at(__ldg(ring + slots), slots);
}

// The history's amax, the largest slot but the turn's two (which the quantization writes), in
// every lane of the calling warp. Each slot is loaded before it is compared with the turn's
// slots, so that a caller's load of the turn and these are in flight together.
__device__ __forceinline__ uint32_t ring_amax(const uint32_t* ring, int64_t slots,
                                              const RingTurn& t) {
  uint32_t m = 0;
#pragma unroll 1
  for (int64_t s = threadIdx.x & 31; s < slots; s += 32) {
    const uint32_t v = __ldg(ring + s);
    if (s != t.current && s != t.next) m = max(m, v);
  }
  return __reduce_max_sync(0xffffffffu, m);
}

}  // namespace lpbench::cuda
