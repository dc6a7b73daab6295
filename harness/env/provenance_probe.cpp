#include "harness/env/provenance_probe.h"

#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>
#include <torch/headeronly/version.h>

#include <cstdlib>
#include <fstream>

#include "base/env/build_info.h"
#include "base/env/process.h"
#include "harness/env/nvml.h"

#ifdef LPBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace lpbench::env {

namespace {

std::optional<std::string> cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return std::nullopt;
}

// ATen's dispatch level, as ATEN_CPU_CAPABILITY may have lowered it, and oneDNN's ISA cap.
std::string cpu_kernel_set() {
  std::string set = at::get_cpu_capability();
  const char* onednn = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (onednn != nullptr && *onednn != '\0') set += fmt::format(" (oneDNN at most {})", onednn);
  return set;
}

std::optional<std::string> cuda_runtime_version() {
  if (!at::detail::getCUDAHooks().hasCUDA()) return std::nullopt;
  const long version = at::detail::getCUDAHooks().versionCUDART();  // e.g. 13000
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::optional<std::string> gpu_name([[maybe_unused]] const c10::Device& device) {
#ifdef LPBENCH_TORCH_CUDA
  if (device.is_cuda()) return std::string(at::cuda::getDeviceProperties(device.index())->name);
#endif
  return std::nullopt;
}

}  // namespace

Provenance collect_provenance(const c10::Device& device) {
  const BuildInfo& build = build_info();
  Provenance p;
  p.host = host_name();
  p.git_commit = std::string(build.git_commit);
  p.git_dirty = build.git_dirty;
  p.lpbench_version = std::string(build.version);
  p.build_type = std::string(build.build_type);
  p.torch_version = TORCH_VERSION;
  p.cpu_name = cpu_model_name();
  p.cpu_kernels = cpu_kernel_set();
  p.gpu_name = gpu_name(device);
  if (device.is_cuda()) {
    p.driver_version = Nvml::instance().driver_version();
    p.cuda_version = cuda_runtime_version();
  }
  return p;
}

}  // namespace lpbench::env
