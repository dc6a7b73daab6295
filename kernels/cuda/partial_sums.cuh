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

// Two sets of `cols` columns in one launch (the q and k heads' weight gradients): out0 from the
// parts0 rows at partial0, out1 from the parts1 at partial1, each as the call above sums it.
void sum_partial_rows(const float* partial0, int64_t parts0, float* out0, const float* partial1,
                      int64_t parts1, float* out1, int64_t cols, cudaStream_t stream);

}  // namespace lpbench::cuda
