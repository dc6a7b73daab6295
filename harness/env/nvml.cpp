#include "harness/env/nvml.h"

#include <dlfcn.h>

namespace lpbench::env {

namespace {

// The few NVML entry points used, declared here so that the build needs no nvml.h.
using NvmlReturn = int;  // NVML_SUCCESS == 0
using InitFn = NvmlReturn (*)();
using DriverVersionFn = NvmlReturn (*)(char*, unsigned int);

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

}  // namespace

Nvml& Nvml::instance() {
  static Nvml nvml;
  return nvml;
}

Nvml::Nvml() {
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) return;
  auto init = symbol<InitFn>(library_, "nvmlInit_v2");
  available_ = init != nullptr && init() == 0;
}

std::optional<std::string> Nvml::driver_version() const {
  if (!available_) return std::nullopt;
  auto get = symbol<DriverVersionFn>(library_, "nvmlSystemGetDriverVersion");
  char buffer[96] = {};
  if (get == nullptr || get(buffer, sizeof(buffer)) != 0) return std::nullopt;
  return std::string(buffer);
}

}  // namespace lpbench::env
