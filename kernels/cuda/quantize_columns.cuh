#pragma once

// Xᵀ from BF16 X in blocks of one row of Xᵀ × kb (kb 256, 512 or 1024): each column of X cut
// into runs of kb rows, every run its own scale. int8-block:k-block=<kb> reads its activations
// and gradients this way in wgrad (dYᵀ and Xᵀ, K running over the tokens). One pass: a CTA holds
// a run of kb rows × 32 columns in registers, finds the 32 column amaxes, quantizes and writes
// the 32 rows of Xᵀ. quantize() calls it where it applies; nothing else should.
#include "kernels/cuda/quantize.cuh"

namespace lpbench::cuda {

// Whether this call can take it: transpose on, blocks {1, 256 | 512 | 1024} in output
// coordinates, BF16 in, no transposed copy, stochastic rounding or delayed scaling, a column
// count that is a multiple of 8 and 16-byte aligned input rows.
bool columns_kernel_applies(const QuantizeArgs& args);

void quantize_columns(const QuantizeArgs& args, cudaStream_t stream);

}  // namespace lpbench::cuda
