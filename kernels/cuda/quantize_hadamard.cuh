#pragma once

// The block Hadamard rotation of the hadamard=<b> recipes fused into their quantization: a
// BF16 operand, rotated in blocks of b along its columns (the dimension its product sums
// over), quantized per tensor or per row, with the numerics of kernels/reference/hadamard.h
// followed by kernels/reference/quantize.h, bit for bit.
//
// The scale needs the amax of the rotated values, which no producer knows, so it is two passes
// of the same kernel, each reading the BF16 operand once and rotating it in registers: the
// first folds the amaxes, the second quantizes. 5 bytes an element against the 14 of the torch
// path it replaces (an FP32 copy, a matmul by H per block, an FP32 amax pass and a quantizing
// pass over FP32). The operand may be X or Xᵀ of a row-major X: the wgrad and dgrad operands
// are transposes of what the step holds, and rotating along X's rows goes through a swizzled
// shared-memory tile instead of a transposed copy.
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

struct HadamardQuantizeArgs {
  const void* x = nullptr;  // BF16 X [rows, cols], row-major with row stride ld
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;
  bool transpose = false;  // the operand is Xᵀ [cols, rows], rotated along X's rows; else X
  int64_t block = 0;       // b: a power of two from 2 to kHadamardMaxBlock
  // int8, fp8_e4m3 or fp8_e5m2; or fp32: the rotated values alone (one pass, no scales, no
  // workspace; values 16-byte aligned), for the scalings the kernel does not quantize (blocks,
  // stochastic rounding, delayed scaling), which quantize them after.
  DType out_type = DType::int8;
  bool rowwise = false;       // one scale per operand row ({1,0}); else one per tensor ({0,0})
  void* values = nullptr;     // the operand's shape, row-major, in out_type
  float* scales = nullptr;    // [1] tensorwise, [operand rows] rowwise
  void* workspace = nullptr;  // hadamard_workspace_bytes(): the amaxes
};

// The largest block the kernel rotates in registers (eight values a lane, 32 lanes); larger
// blocks take the reference's torch ops.
constexpr int64_t kHadamardMaxBlock = 256;

// Whether the kernel takes this call: a block of 2..256 that divides the operand's columns,
// both operand sides multiples of 8, 16-byte aligned input rows and 8-byte aligned output
// (16-byte for FP32).
bool hadamard_kernel_applies(const HadamardQuantizeArgs& args);

// One FP32 word per scale: 4 bytes tensorwise, 4 per operand row rowwise; none for FP32 out.
size_t hadamard_workspace_bytes(const HadamardQuantizeArgs& args);

// The multiplier of the normalised transform, 1/√b rounded once to FP32: the same expression as
// the reference's, so that the two round alike.
float hadamard_norm(int64_t block);

// Throws std::invalid_argument where the kernel does not apply, CudaError for a failed launch.
void quantize_hadamard(const HadamardQuantizeArgs& args, cudaStream_t stream);

}  // namespace lpbench::cuda
