#pragma once

#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

// out[c] = Σ_p partial[p, c] over `parts` rows of `cols` FP32 partial sums: the second step of
// the norm backwards' weight gradients (rmsnorm.cu, qk_norm_rope.cu), whose blocks each leave
// one partial row per row slot or per block. 32 columns a block (coalesced reads of each partial
// row), the partial rows split among 32 threads a column and their sums added in shared memory:
// one thread a column walking every partial row alone left the GPU waiting on each read in turn.
void sum_partial_rows(const float* partial, int64_t parts, int64_t cols, float* out,
                      cudaStream_t stream);

// One or two sets of partial rows with the same columns, for the launch below and for the device
// side (sum_partial_chunk), which a kernel that runs the sums beside other work in one launch
// calls (qk_norm_rope.cu's, which also copies dV). The sums' first `chunks` blocks take set 0's
// 32-column chunks, the rest set 1's.
struct PartialSets {
  const float* partial[2];
  int64_t parts[2];
  float* out[2];
};

// The first `count` (1 or 2) sets in one launch (the q and k heads' weight gradients), each as
// the call above sums it.
void sum_partial_rows(const PartialSets& sets, int count, int64_t cols, cudaStream_t stream);

// 32 splits a column, not 8: at 8 the qwen3-8b layer's four calls (two of 4096 columns, two of
// 128 columns over 16 896 partial rows) took 0.18 ms of its step (docs/perf-log.md §35).
constexpr int kSumColumns = 32;
constexpr int kSumSplits = 32;
constexpr int kSumThreads = kSumColumns * kSumSplits;  // a block of the sums, one-dimensional

// Block `block` of the sums (its kSumThreads threads, `tid` this one's index): its chunk's 32
// columns, each split's partial rows summed apart and the splits added in order. The caller has
// waited for the partial rows.
__device__ __forceinline__ void sum_partial_chunk(const PartialSets& sets, int64_t cols,
                                                  uint32_t chunks, uint32_t block, int tid) {
  __shared__ float sums[kSumSplits][kSumColumns];
  const int lane = tid % kSumColumns;
  const int split = tid / kSumColumns;
  // The set's fields by constant indices: indexed by a run-time value, the parameters were copied
  // to a stack frame first (48 bytes of local memory), and the norm backward's call ran 4 %
  // slower (docs/perf-log.md §44).
  const bool first = block < chunks;
  const float* partial = first ? sets.partial[0] : sets.partial[1];
  const int64_t parts = first ? sets.parts[0] : sets.parts[1];
  float* out = first ? sets.out[0] : sets.out[1];
  const int64_t col = static_cast<int64_t>(first ? block : block - chunks) * kSumColumns + lane;
  float total = 0.0F;
  if (col < cols) {
    for (int64_t p = split; p < parts; p += kSumSplits)
      total += partial[p * cols + col];
  }
  sums[split][lane] = total;
  __syncthreads();
  if (split != 0 || col >= cols) return;
  for (int i = 1; i < kSumSplits; ++i)
    total += sums[i][lane];
  out[col] = total;
}

}  // namespace lpbench::cuda
