#include "base/env/gpu_peaks.h"

#include <array>

namespace lpbench::env {

namespace {

// Dense (no sparsity) datasheet figures. Order matters: the first match wins, so the more
// specific names come first.
constexpr std::array<GpuPeaks, 6> kPeaks{{
    {"H200", 989.0, 1979.0, 1979.0, 4.8},
    {"H100 PCIe", 756.0, 1513.0, 1513.0, 2.0},
    {"H100", 989.0, 1979.0, 1979.0, 3.35},  // SXM
    {"A100-SXM4-40GB", 312.0, 0.0, 624.0, 1.555},
    {"A100", 312.0, 0.0, 624.0, 2.039},        // SXM4 80GB
    {"RTX 4090", 165.0, 330.0, 661.0, 1.008},  // BF16 with FP32 accumulation
}};

}  // namespace

std::optional<GpuPeaks> gpu_peaks(std::string_view gpu_name) {
  for (const GpuPeaks& peaks : kPeaks) {
    if (gpu_name.find(peaks.match) != std::string_view::npos) return peaks;
  }
  return std::nullopt;
}

}  // namespace lpbench::env
