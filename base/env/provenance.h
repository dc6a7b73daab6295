#pragma once

#include <optional>
#include <string>

namespace lpbench::env {

// Where and with what a run was measured; stored with every run (harness/env/provenance_probe.h
// collects it).
struct Provenance {
  std::string host;
  std::string git_commit;
  bool git_dirty = false;
  std::string lpbench_version;
  std::string build_type;
  std::string torch_version;
  std::optional<std::string> cpu_name;
  // The CPU kernels torch's operators ran on: ATen's dispatch level ("AVX512", "AVX2",
  // "DEFAULT"), and oneDNN's ISA cap where ONEDNN_MAX_CPU_ISA sets one. A CPU run's losses
  // depend on it (the roundings differ), not on the CPU's name alone.
  std::optional<std::string> cpu_kernels;
  std::optional<std::string> gpu_name;        // of the run's device, when it is a GPU
  std::optional<std::string> driver_version;  // the NVIDIA driver, through NVML
  std::optional<std::string> cuda_version;    // the CUDA runtime torch was built with
};

}  // namespace lpbench::env
