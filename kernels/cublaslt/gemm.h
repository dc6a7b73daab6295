#pragma once

#include <cstdint>
#include <string>

#include "kernels/cuda/types.cuh"

// cuBLASLt's INT8 and FP8 GEMMs, called directly: a heuristic algorithm search cached per
// problem, a 32 MiB workspace (the usual Hopper figure), and the operand layout the tensor
// cores want. torch's at::_int_mm does neither the search nor the workspace.
//
// Every product is C[M,N] = A[M,K] · B[N,K]ᵀ, all row-major, A and B K-contiguous (TN).
namespace lpbench::cublaslt {

// Whether this cuBLASLt offers an INT8 algorithm for the problem (K % 4 == 0 and a heuristic
// answer) on the current device.
bool int8_gemm_supported(int64_t m, int64_t n, int64_t k);
// Exact INT32 products of INT8 operands.
void int8_gemm(const int8_t* a, const int8_t* b, int32_t* c, int64_t m, int64_t n, int64_t k,
               cudaStream_t stream);

// How an FP8 operand's FP32 scales are laid out (cuBLASLt's scale modes).
enum class ScaleMode {
  scalar,        // one scale
  outer_vector,  // one per row of the operand (rowwise along K)
  vec128,        // one per 1×128 block along K: [rows, ceil(K/128)] row-major
  blk128x128,    // one per 128×128 block: [ceil(rows/128), ceil(K/128)] row-major
};

struct Fp8GemmArgs {
  const void* a = nullptr;
  cuda::DType a_type = cuda::DType::fp8_e4m3;
  const float* a_scales = nullptr;
  ScaleMode a_mode = ScaleMode::scalar;
  const void* b = nullptr;
  cuda::DType b_type = cuda::DType::fp8_e4m3;
  const float* b_scales = nullptr;
  ScaleMode b_mode = ScaleMode::scalar;
  int64_t m = 0, n = 0, k = 0;
  void* c = nullptr;
  cuda::DType c_type = cuda::DType::bf16;  // bf16 or fp32
};

// Whether this cuBLASLt offers an algorithm for the problem on the current device; where it
// does not, `why` says what it answered.
bool fp8_gemm_supported(const Fp8GemmArgs& args, std::string* why);
void fp8_gemm(const Fp8GemmArgs& args, cudaStream_t stream);

// The cuBLASLt version, "13.1.0" style.
std::string version();

}  // namespace lpbench::cublaslt
