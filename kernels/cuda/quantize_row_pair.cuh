#pragma once

// X per row and Xᵀ per row of Xᵀ (QuantizeArgs::copy_rowwise) for a BF16 matrix whose sides are
// multiples of 128: one pass finds every row's and every column's amax, a second quantizes
// both layouts from one read (quantize_byte_tile.cuh). quantize() calls it where it applies.
#include "kernels/cuda/quantize.cuh"

namespace lpbench::cuda {

// Whether this call can take it: copy_rowwise, BF16 in, no stochastic rounding, sides multiples
// of 128, 16-byte aligned input rows, outputs aligned for 8-byte (X's layout) and 4-byte (Xᵀ's)
// stores.
bool row_pair_kernel_applies(const QuantizeArgs& args);

// (rows + cols) words of workspace: the amaxes its own pass finds where no producer reported them.
size_t row_pair_workspace_bytes(const QuantizeArgs& args);

void quantize_row_pair(const QuantizeArgs& args, cudaStream_t stream);

}  // namespace lpbench::cuda
