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

// Whether sum_partial_rows_in_grid takes these partial rows (its offsets are 32-bit).
constexpr bool partial_rows_fit_in_grid_sums(int64_t parts, int64_t cols) {
  return parts * cols < (int64_t{1} << 31);
}

#if defined(__CUDACC__)
// Inside the producer, where it was launched cooperatively (launch_cooperative): after the grid
// sync that follows the last partial row's store, the blocks take the 32-column chunks in turn,
// chunk i to block (i + first_block) % gridDim.x, so that the sums of two sets can start on
// different blocks. Every thread of every block calls it (blockDim.x a multiple of 32); a thread
// sums 32 / (blockDim.x / 32) of a column's sets. Its loads go out eight at a time (four sets, two
// rows each) and are added in each set's row order afterwards: one load at a time, each waiting
// on L2, a thread's ~33 loads made the call slower than the second kernel it replaces
// (docs/perf-log.md §44). Adding the 0 that stands for a row past the last leaves a sum's bits
// as they are (a sum that starts at +0 is never −0).
static __device__ __noinline__ void sum_partial_rows_in_grid(const float* partial, int64_t parts,
                                                             int64_t cols, float* out,
                                                             uint32_t first_block) {
  constexpr int kSetsAtOnce = 4;
  constexpr int kRowsAtOnce = 2;
  __shared__ float sums[kSumSplits][kSumColumns];
  const int x = static_cast<int>(threadIdx.x) % kSumColumns;
  const int y = static_cast<int>(threadIdx.x) / kSumColumns;
  const int ys = static_cast<int>(blockDim.x) / kSumColumns;
  const int per = kSumSplits / ys;  // this thread's sets: y, y + ys, ...
  // Element offsets in 32 bits: partial_rows_fit_in_grid_sums.
  const uint32_t n = static_cast<uint32_t>(cols), count = static_cast<uint32_t>(parts);
  const uint32_t chunks = (n + kSumColumns - 1) / kSumColumns;
  const uint32_t mine = (blockIdx.x + gridDim.x - first_block % gridDim.x) % gridDim.x;
  for (uint32_t chunk = mine; chunk < chunks; chunk += gridDim.x) {
    const uint32_t col = chunk * kSumColumns + x;
    for (int j0 = 0; j0 < per; j0 += kSetsAtOnce) {
      const uint32_t s0 = y + j0 * ys;  // the set of total[0]; total[q] is set s0 + q·ys
      float total[kSetsAtOnce] = {};
      for (uint32_t p0 = s0; p0 < count; p0 += kRowsAtOnce * kSumSplits) {
        float v[kRowsAtOnce][kSetsAtOnce];
#pragma unroll
        for (int r = 0; r < kRowsAtOnce; ++r) {
#pragma unroll
          for (int q = 0; q < kSetsAtOnce; ++q) {
            const uint32_t p = p0 + q * ys + r * kSumSplits;
            // L2, not L1: the rows were written by other SMs during this kernel.
            v[r][q] = j0 + q < per && p < count && col < n ? __ldcg(partial + p * n + col) : 0.0F;
          }
        }
#pragma unroll
        for (int r = 0; r < kRowsAtOnce; ++r) {
#pragma unroll
          for (int q = 0; q < kSetsAtOnce; ++q)
            total[q] += v[r][q];
        }
      }
#pragma unroll
      for (int q = 0; q < kSetsAtOnce; ++q)
        if (j0 + q < per) sums[s0 + q * ys][x] = total[q];
    }
    __syncthreads();
    if (y == 0 && col < n) {
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
