#pragma once

// The INT8 GEMM backends by name, without torch (the options parser and its fuzzer use them).
#include <optional>
#include <string_view>

namespace lpbench::kernels {

// Which INT8 GEMM runs the INT8 products on a GPU. All give the same bits (exact INT32 products,
// the same epilogue); they differ in speed only.
enum class Int8Backend {
  automatic,      // the default: lpbench_wgmma on Hopper (sm_90) wherever it takes the operands,
                  // cublaslt elsewhere (on the H100 the wgmma kernel was the faster of the two at
                  // the GEMM and layer levels for tensor, row and block scales: docs/perf-log.md)
  cublaslt,       // cuBLASLt's INT8 GEMM (heuristic, workspace), then lpbench's dequantize kernel
  lpbench_mma,    // lpbench's tensor-core kernel with the dequantization fused into it
  torch_int_mm,   // torch's at::_int_mm (cuBLASLt without a search or workspace), then dequantize:
                  // the stock path, as a baseline
  lpbench_wgmma,  // lpbench's Hopper kernel (wgmma + TMA) for tensor, row and block scales, with
                  // the scaling fused; on other GPUs the cublaslt choice stands in
};

// The backend of a --int8-gemm name, or none.
inline std::optional<Int8Backend> int8_backend_named(std::string_view name) {
  if (name == "auto") return Int8Backend::automatic;
  if (name == "cublaslt") return Int8Backend::cublaslt;
  if (name == "lpbench") return Int8Backend::lpbench_mma;
  if (name == "torch") return Int8Backend::torch_int_mm;
  if (name == "wgmma") return Int8Backend::lpbench_wgmma;
  return std::nullopt;
}
inline constexpr std::string_view kInt8GemmNames = "auto, cublaslt, lpbench, torch, wgmma";

}  // namespace lpbench::kernels
