#pragma once

#include <ATen/ATen.h>

#include <string>
#include <string_view>

#include "kernels/int8_backend.h"
#include "kernels/recipe.h"
#include "kernels/reference/quantize.h"

namespace lpbench::kernels {

using reference::Quantized;

void set_int8_backend(Int8Backend backend);
Int8Backend int8_backend();
std::string_view to_string(Int8Backend backend);

// C[M,N] = A[M,K] · B[N,K]ᵀ of quantized operands, on their device, with the numerics of
// kernels/reference/scaled_gemm.h; out_dtype BF16 or FP32; bias [N] (FP32) optional.
at::Tensor scaled_gemm(const Quantized& a, const Quantized& b, at::ScalarType out_dtype,
                       const at::Tensor& bias = {});

// c += A · Bᵀ, c FP32 [M,N] contiguous: scaled_gemm's FP32 result, then one add; with
// LPBENCH_WGMMA_ADD_IN_EPILOGUE set, lpbench's wgmma kernel adds into c as it stores
// (ScaledGemmArgs::accumulate; slower as built, docs/perf-log.md §26). The same bits either way.
void scaled_gemm_add(const Quantized& a, const Quantized& b, at::Tensor& c);

// What scaled_gemm runs for operands of these formats and block shapes on `device`, as the store
// records it: "cpu-reference" (exact; an emulation of the GPU numerics, not a hardware speed),
// "cublaslt-int8+dequantize", "lpbench-mma", "cublaslt-fp8" or "reference-on-gpu" (correct but
// not a fast path: said so wherever it is used).
std::string scaled_gemm_backend(const Quantized& a, const Quantized& b, const at::Device& device);

// The config lpbench's wgmma kernel runs these operands with (its heuristic on this device, as
// printed by cuda::to_string(WgmmaConfig)), or empty where that kernel does not take them.
std::string wgmma_config_name(const Quantized& a, const Quantized& b);

// The backend of each quantized GEMM of `gemms` on `device`, as the store records it with a run:
// one name when all agree ("cpu-reference"), else "fprop: ...; dgrad: ...; wgrad: ...".
std::string gemm_backends(const LinearGemms& gemms, const at::Device& device);

}  // namespace lpbench::kernels
