#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/saved_activation.cuh"
#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

// RMSNorm of the rows of a BF16 matrix, optionally after adding a residual, in one pass:
//   h = x + residual            (BF16, rounded as torch's add rounds it; only with a residual)
//   rstd = 1 / sqrt(mean(h²) + eps)   (FP32, kept for the backward)
//   y = h · rstd · weight       (FP32 math, rounded once to BF16)
// Rows are `cols` elements apart (contiguous), cols a multiple of 8 up to 16384 (8192 for the
// backward: rmsnorm_max_cols); the pointers 16-byte aligned. Under saved=int8 the forward also
// keeps h as INT8 blocks (`keep`) and the backward reads them (`h_kept`) in place of h; both
// need cols a multiple of 128.
struct RmsNormArgs {
  const void* x = nullptr;         // [rows, cols] bf16
  const void* residual = nullptr;  // [rows, cols] bf16, optional
  const float* weight = nullptr;   // [cols]
  int64_t rows = 0;
  int64_t cols = 0;
  float eps = 1e-5F;
  void* h = nullptr;           // [rows, cols] bf16: x + residual (needed only with a residual)
  void* y = nullptr;           // [rows, cols] bf16; null: h and rstd only (the consumer's
                               // quantization computes y: quantize_rmsnorm_tensorwise)
  float* rstd = nullptr;       // [rows]
  uint32_t* y_amax = nullptr;  // optional: max |y| (amax.cuh), for a tensorwise quantization;
                               // with y null, y's values are computed for it and not stored
  Int8Blocks keep;             // optional: h's INT8 blocks written (h is x without a residual)
};

void rmsnorm_forward(const RmsNormArgs& args, cudaStream_t stream);

// The gradients of rmsnorm_forward: with xhat = h · rstd and g = dy · weight,
//   dh = rstd · (g − xhat · mean(g · xhat)) + dh_in    (BF16; dh_in, the gradient reaching h
//                                                       along the residual path, optional)
//   dweight = Σ_rows dy · xhat                          (FP32, written)
struct RmsNormBackwardArgs {
  const void* dy = nullptr;       // [rows, cols] bf16
  const void* h = nullptr;        // [rows, cols] bf16, the normalized input (or `h_kept`)
  const float* weight = nullptr;  // [cols]
  const float* rstd = nullptr;    // [rows]
  const void* dh_in = nullptr;    // [rows, cols] bf16, optional
  int64_t rows = 0;
  int64_t cols = 0;
  void* dh = nullptr;           // [rows, cols] bf16
  float* dweight = nullptr;     // [cols]
  void* workspace = nullptr;    // rmsnorm_backward_workspace_bytes(rows, cols)
  uint32_t* dh_amax = nullptr;  // optional: max |dh| (amax.cuh)
  KeptInt8Blocks h_kept;        // optional: h read from its INT8 blocks
};

size_t rmsnorm_backward_workspace_bytes(int64_t rows, int64_t cols);

// The longest rows both kernels take (the backward's limit).
constexpr int64_t rmsnorm_max_cols = 8192;
void rmsnorm_backward(const RmsNormBackwardArgs& args, cudaStream_t stream);

}  // namespace lpbench::cuda
