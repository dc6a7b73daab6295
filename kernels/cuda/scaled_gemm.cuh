#pragma once

#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

// C[M,N] = A[M,K] · B[N,K]ᵀ (both K-contiguous: the TN layout of the training GEMMs), with the
// numerics of kernels/reference/scaled_gemm.h, bit for bit for INT8:
//   per K block of kblock elements (the whole K when neither operand's scale varies along K):
//   an exact INT32 partial product, converted to FP32, times the FP32 product sa·sb, added in
//   K-block order in FP32 with separate roundings (no FMA); then + bias, rounded once to the
//   output type.
// Scales are FP32, row-major [ceil(rows / block_rows), ceil(K / kblock)] for each operand, with
// block_rows 0 meaning one scale for all rows (tensorwise) and a scale K extent of 1 when the
// scale does not vary along K:
//   tensorwise: a {0}, b {0}, kblock 0;   rowwise: a {1}, b {1}, kblock 0;
//   blockwise:  a {1}, b {kblock} (weights) or {1} (activations), kblock 128, 256, 512 or 1024.
struct ScaledGemmArgs {
  const void* a = nullptr;      // [M, K], lda = K
  const void* b = nullptr;      // [N, K], ldb = K
  DType ab_type = DType::int8;  // int8 (fp8 may come later)
  int64_t m = 0, n = 0, k = 0;
  const float* a_scales = nullptr;
  int64_t a_block_rows = 0;
  const float* b_scales = nullptr;
  int64_t b_block_rows = 0;
  int64_t kblock = 0;           // 0: scales constant along K
  const float* bias = nullptr;  // [N] FP32, or null
  void* c = nullptr;            // [M, N] row-major, ldc = N
  DType c_type = DType::bf16;   // bf16 or fp32
  // C += the product (FP32 C only; lpbench's wgmma kernel only): each element's existing value
  // plus the product as it would have been stored, one FP32 add, so the bits are those of a
  // product written out and added after (a wgrad summed into a gradient across micro-batches).
  bool accumulate = false;
};

// The K blocks lpbench's INT8 kernels take: none (0), or 128 to 1024 in powers of two (one to
// eight 128-deep stages per block; a block's INT8 partial stays below 2²⁴, exact in FP32).
inline bool kblock_supported(int64_t kblock) {
  return kblock == 0 || kblock == 128 || kblock == 256 || kblock == 512 || kblock == 1024;
}

// A kernel of lpbench's own on the tensor cores (mma.sync, INT8 in, INT32 per K block, FP32
// across blocks), for the granularities cuBLASLt cannot scale. Requires K % 16 == 0 and 16-byte
// aligned operands; any M, N.
void scaled_gemm_mma(const ScaledGemmArgs& args, cudaStream_t stream);

// The epilogue of a GEMM that produced exact INT32 products over all of K (cuBLASLt's INT8
// path): c = (float(acc) · (sa·sb)) + bias, rounded once to c_type; tensorwise or rowwise scales
// as in ScaledGemmArgs (kblock 0). acc is [M, N] row-major.
void dequantize_int32(const int32_t* acc, const ScaledGemmArgs& args, cudaStream_t stream);

}  // namespace lpbench::cuda
