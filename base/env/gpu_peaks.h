#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lpbench::env {

// A GPU's dense datasheet peaks, by the name the CUDA runtime reports. The basis of MFU (BF16
// peak) and of the roofline fraction (each GEMM at the peak of its own precision).
struct GpuPeaks {
  std::string_view match;  // a substring of the reported name
  double bf16_tflops = 0.0;
  double fp8_tflops = 0.0;  // 0: no FP8 tensor cores
  double int8_tops = 0.0;
  double memory_tb_s = 0.0;  // HBM or GDDR bandwidth
};

// The peaks of `gpu_name`, or nothing for a GPU lpbench has no figures for (no MFU is then
// reported, and the report says why, rather than guess).
std::optional<GpuPeaks> gpu_peaks(std::string_view gpu_name);

}  // namespace lpbench::env
