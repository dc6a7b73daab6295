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

}  // namespace lpbench::cuda
