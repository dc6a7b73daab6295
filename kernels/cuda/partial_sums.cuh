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

// The blocks of a grid-strided backward over `rows` rows, `rows_per_block` at a time, with
// `threads` threads a block: one wave (2048 threads an SM), fewer where the rows run out. Each
// block then walks several rows, and keeps one partial row per row slot.
int64_t one_wave_blocks(int64_t rows, int rows_per_block, int threads);

// The blocks of `kernel` (with `threads` threads and `smem_bytes` of dynamic shared memory a
// block) that the GPU runs at once, at most `bound` (one_wave_blocks, which sizes the workspace).
int64_t resident_blocks(const void* kernel, int threads, size_t smem_bytes, int64_t bound);

}  // namespace lpbench::cuda
