#pragma once

#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

// Dynamic scaled quantization of a row-major matrix X [rows, cols] (BF16 or FP32) to INT8 or FP8,
// with the numerics of kernels/reference/quantize.h, bit for bit.
//
// The output matrix is X, or Xᵀ when `transpose` is set (the transpose is fused: no separate
// pass). Blocks are given in OUTPUT coordinates: the output [R, C] (R = rows or cols) is cut
// into block_rows × block_cols blocks (0: the whole dimension), and
//   values  [R, C] row-major, in out_type (int8 or fp8 bytes),
//   scales  [ceil(R / br), ceil(C / bc)] row-major FP32.
// Granularities: tensorwise {0,0} (two passes: an amax reduction, then the quantize), rowwise
// {1,0}, blockwise {1,128}, {128,128}, {32,32}, and any other block shape.
struct QuantizeArgs {
  const void* x = nullptr;
  DType x_type = DType::bf16;  // bf16 or fp32
  int64_t rows = 0;            // of X
  int64_t cols = 0;            // of X
  int64_t ld = 0;              // elements between rows of X (>= cols)
  bool transpose = false;
  DType out_type = DType::int8;  // int8, fp8_e4m3, fp8_e5m2
  int64_t block_rows = 0;        // in output coordinates; 0: all
  int64_t block_cols = 0;
  void* values = nullptr;   // [R, C]
  float* scales = nullptr;  // [ceil(R/br), ceil(C/bc)]
  // Optional: the transposed output as well, from the same pass over X (a training step reads
  // X in fprop and Xᵀ in wgrad, W and Wᵀ, dY and dYᵀ). Exact only where blocks map onto blocks,
  // so it needs `transpose` false and square blocks (block_rows == block_cols; tensorwise {0,0}
  // included): the transposed output is then what quantizing Xᵀ under the same spec gives.
  void* values_t = nullptr;   // [C, R]
  float* scales_t = nullptr;  // [ceil(C/bc), ceil(R/br)], the transpose of `scales`
  // With the transposed copy, rowwise instead: X per row ({1,0}, `transpose` false) and Xᵀ per
  // row of Xᵀ (each column of X its own scale; scales_t [C, 1]): the two quantizations
  // int8-row, fp8-row and the dy=row modifier read an operand in, which do not transpose into
  // each other. One amax pass finds both the row and the column amaxes, one pass writes both.
  bool copy_rowwise = false;
  // copy_rowwise only, optional: every row's max |x|, then every column's, already known
  // ([rows + cols] FP32 bits; the kernel that produced X reported them: kernels/cuda/amax.cuh),
  // so the row pair skips its amax pass. The paths off the row pair's grid ignore it.
  const uint32_t* line_amax = nullptr;
  // Tensorwise and full-row/column reductions need a device scratch of at least
  // quantize_workspace_bytes(args) bytes.
  void* workspace = nullptr;
  // The workspace is zero already (a one-word workspace, or the row pair's rows + cols words:
  // a range of a block zeroed in one launch, kernels/torch/amax_registry.h), so the amax pass
  // folds into it with no memset launched before it.
  bool workspace_zeroed = false;
  // Tensorwise only, optional: max |x| already known, as the bits of an FP32 (the kernel that
  // produced X reported it: kernels/cuda/amax.cuh), so the amax pass over X is skipped.
  const uint32_t* amax = nullptr;
  // Tensorwise only, delayed scaling: `amax` is a history's (earlier steps' amaxes), which
  // values of X may exceed: those saturate at ±fmax and a NaN value becomes 0
  // (reference::quantize_by_amax).
  bool delayed = false;
  // Tensorwise only, optional: max |x| of X, as FP32 bits, folded into *amax_seen (atomicMax;
  // the caller zeroes it) by the quantizing pass itself: delayed scaling's record of this step.
  uint32_t* amax_seen = nullptr;
  // Tensorwise only, delayed scaling from a history kept on the device, in place of `amax` and
  // `amax_seen`: a ring of `history_slots` amaxes (FP32 bits), then the current slot's index (the
  // caller zeroes all history_slots + 1 words once: kernels/torch/amax_history.h, amax_ring.cuh).
  // The current slot (zero) takes this quantization's max |x|, the slot after it is zeroed and
  // becomes the current one. With `delayed`, X is scaled by the largest slot but those two (the
  // history); without, by its own amax (a history's first quantization). The one-pass kernel
  // reads the ring and records into it itself, so a step of delayed scaling launches nothing but
  // its quantizations. `history_current`: the current slot, as the host knows it (the index is
  // then only written); -1 where the ring's index says, so that the host passes the same
  // arguments every step and a CUDA graph replays them (a one-thread launch after the one-pass
  // kernel then moves the index on: amax_ring.cuh).
  uint32_t* history = nullptr;
  int64_t history_slots = 0;
  int64_t history_current = -1;
  // INT8 only: stochastic rounding, q = floor(x · inv + u) with u = rounding_uniform(seed, i) for
  // the element's row-major index i in the output (the transposed copy takes its element's
  // index in the output, so that it stays the output's exact transpose); see
  // kernels/reference/quantize.h. Takes the general path (amax pass, then the apply pass).
  bool stochastic = false;
  uint64_t seed = 0;
  // Benchmarks only: the paths the one-pass kernels replaced, for tests/gpu/quantize_bench to time
  // against them (the outputs are the same bits): the general path's tile kernel where the
  // tensorwise or row-pair kernel applies, the general path where the columns kernel does, and
  // the apply pass's inverse scale looked up for each value where one per tile would do.
  bool tile_kernel = false;
};

size_t quantize_workspace_bytes(const QuantizeArgs& args);

// Whether one pass can write X and Xᵀ under this spec (see QuantizeArgs::values_t).
inline bool quantize_writes_transpose_too(int64_t block_rows, int64_t block_cols) {
  return block_rows == block_cols;
}

// Which kernel quantize() runs for these arguments: "tensorwise" (one pass,
// quantize_tensorwise.cu), "tile" (one pass, block amaxes in the tile), "rows" (one pass, a row a
// CTA), "segments" (one pass, a 1 × bc block a warp), "columns" (one pass, 1 × bc blocks of Xᵀ,
// quantize_columns.cu), "block tiles" (an amax pass, then the tensorwise kernel applying one
// scale a tile: kb × kb blocks) or "general" (an amax pass, then the tile kernel).
const char* quantize_kernel_name(const QuantizeArgs& args);

// Throws std::invalid_argument for inconsistent arguments and CudaError for a failed launch.
void quantize(const QuantizeArgs& args, cudaStream_t stream);

}  // namespace lpbench::cuda
