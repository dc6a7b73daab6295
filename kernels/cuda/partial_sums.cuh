#pragma once

#include <cstdint>

#include "kernels/cuda/types.cuh"

#if defined(__CUDACC__)
#include <cooperative_groups.h>
#endif

namespace lpbench::cuda {

// The second step of the norm backwards' weight gradients (rmsnorm.cu, qk_norm_rope.cu), whose
// blocks each leave one partial row of `cols` FP32 sums per row slot or per block:
//   out[c] = Σ_p partial[p, c] over `parts` rows,
// in one order, so that both ways below give the same bits: the rows split into kSumSplits
// strided sets (set s: rows s, s + 32, ...), each summed in row order, then the sets' sums added
// in set order.
constexpr int kSumColumns = 32;
constexpr int kSumSplits = 32;

// As a kernel of its own, launched as the producer's programmatic dependent (launch_modes.cuh):
// 32 columns a block (coalesced reads of each partial row), 32 threads a column.
void sum_partial_rows(const float* partial, int64_t parts, int64_t cols, float* out,
                      cudaStream_t stream);

#if defined(__CUDACC__)
// Inside the producer, where it was launched cooperatively (launch_cooperative): after the grid
// sync that follows the last partial row's store, the blocks take the 32-column chunks in turn,
// chunk i to block (i + first_block) % gridDim.x, so that the sums of two sets can start on
// different blocks. Every thread of every block calls it (blockDim.x a multiple of 32). This
// saves the second launch and its gaps: ~6 µs of a 32 µs norm backward (docs/perf-log.md §44).
static __device__ __noinline__ void sum_partial_rows_in_grid(const float* partial, int64_t parts,
                                                             int64_t cols, float* out,
                                                             uint32_t first_block) {
  __shared__ float sums[kSumSplits][kSumColumns];
  const int x = static_cast<int>(threadIdx.x) % kSumColumns;
  const int y = static_cast<int>(threadIdx.x) / kSumColumns;
  const int ys = static_cast<int>(blockDim.x) / kSumColumns;
  const int64_t chunks = (cols + kSumColumns - 1) / kSumColumns;
  const int64_t mine = (blockIdx.x + gridDim.x - first_block % gridDim.x) % gridDim.x;
  for (int64_t chunk = mine; chunk < chunks; chunk += gridDim.x) {
    const int64_t col = chunk * kSumColumns + x;
    for (int s = y; s < kSumSplits; s += ys) {
      float total = 0.0F;
      if (col < cols) {
        // L2, not L1: the rows were written by other SMs during this kernel.
        const float* row = partial + s * cols + col;
        for (int64_t p = s; p < parts; p += kSumSplits, row += kSumSplits * cols)
          total += __ldcg(row);
      }
      sums[s][x] = total;
    }
    __syncthreads();
    if (y == 0 && col < cols) {
      float total = sums[0][x];
      for (int s = 1; s < kSumSplits; ++s)
        total += sums[s][x];
      out[col] = total;
    }
    __syncthreads();  // `sums` is free for the next chunk
  }
}

// The grid-wide barrier before sum_partial_rows_in_grid: every block's partial rows stored and
// visible.
__device__ __forceinline__ void wait_for_every_block() {
  cooperative_groups::this_grid().sync();
}
#endif

}  // namespace lpbench::cuda
