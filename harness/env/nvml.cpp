#include "harness/env/nvml.h"

#include <dlfcn.h>

#include <algorithm>

#include <utility>
#include <vector>

namespace lpbench::env {

namespace {

// The few NVML entry points used, declared here so that the build needs no nvml.h. Values as
// NVML's header defines them.
using NvmlReturn = int;  // NVML_SUCCESS == 0
using Device = void*;
constexpr unsigned kClockSm = 1;
constexpr unsigned kClockMem = 2;
constexpr unsigned kTemperatureGpu = 0;

using InitFn = NvmlReturn (*)();
using DriverVersionFn = NvmlReturn (*)(char*, unsigned int);
using HandleFn = NvmlReturn (*)(unsigned int, Device*);
using ClockFn = NvmlReturn (*)(Device, unsigned int, unsigned int*);
using TemperatureFn = NvmlReturn (*)(Device, unsigned int, unsigned int*);
using PowerFn = NvmlReturn (*)(Device, unsigned int*);
using ReasonsFn = NvmlReturn (*)(Device, unsigned long long*);
struct Utilization {
  unsigned gpu = 0;
  unsigned memory = 0;
};
using UtilizationFn = NvmlReturn (*)(Device, Utilization*);
struct ProcessInfo {  // nvmlProcessInfo_t of the _v3 entry point
  unsigned pid = 0;
  unsigned long long used_gpu_memory = 0;
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
};
using ProcessesFn = NvmlReturn (*)(Device, unsigned*, ProcessInfo*);

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

}  // namespace

std::string describe_throttle_reasons(uint64_t mask) {
  // Bits of nvmlClocksEventReasons: those that lower clocks under load.
  static const std::vector<std::pair<uint64_t, const char*>> reasons{
      {0x4, "sw_power_cap"},         {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},          {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock"}};
  std::string text;
  for (const auto& [bit, name] : reasons) {
    if ((mask & bit) != 0) text += (text.empty() ? "" : ", ") + std::string(name);
  }
  return text;
}

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

void* Nvml::handle(int device) const {
  if (!available_) return nullptr;
  auto get = symbol<HandleFn>(library_, "nvmlDeviceGetHandleByIndex_v2");
  Device d = nullptr;
  if (get == nullptr || get(static_cast<unsigned>(device), &d) != 0) return nullptr;
  return d;
}

std::optional<std::string> Nvml::driver_version() const {
  if (!available_) return std::nullopt;
  auto get = symbol<DriverVersionFn>(library_, "nvmlSystemGetDriverVersion");
  char buffer[96] = {};
  if (get == nullptr || get(buffer, sizeof(buffer)) != 0) return std::nullopt;
  return std::string(buffer);
}

std::optional<double> Nvml::sm_clock(const char* query, int device) const {
  Device d = handle(device);
  auto get = symbol<ClockFn>(library_, query);
  unsigned value = 0;
  if (d == nullptr || get == nullptr || get(d, kClockSm, &value) != 0) return std::nullopt;
  return value;
}

std::optional<double> Nvml::max_sm_clock_mhz(int device) const {
  return sm_clock("nvmlDeviceGetMaxClockInfo", device);
}

std::optional<double> Nvml::sm_clock_mhz(int device) const {
  return sm_clock("nvmlDeviceGetClockInfo", device);
}

GpuSample Nvml::sample(int device) const {
  GpuSample s;
  Device d = handle(device);
  if (d == nullptr) return s;
  unsigned value = 0;
  if (auto clock = symbol<ClockFn>(library_, "nvmlDeviceGetClockInfo")) {
    if (clock(d, kClockSm, &value) == 0) s.sm_clock_mhz = value;
    if (clock(d, kClockMem, &value) == 0) s.memory_clock_mhz = value;
  }
  if (auto temperature = symbol<TemperatureFn>(library_, "nvmlDeviceGetTemperature")) {
    if (temperature(d, kTemperatureGpu, &value) == 0) s.temperature_c = value;
  }
  if (auto power = symbol<PowerFn>(library_, "nvmlDeviceGetPowerUsage")) {
    if (power(d, &value) == 0) s.power_w = value / 1000.0;  // milliwatts
  }
  auto reasons = symbol<ReasonsFn>(library_, "nvmlDeviceGetCurrentClocksEventReasons");
  if (reasons == nullptr)
    reasons = symbol<ReasonsFn>(library_, "nvmlDeviceGetCurrentClocksThrottleReasons");
  unsigned long long mask = 0;
  if (reasons != nullptr && reasons(d, &mask) == 0) {
    s.throttle_reasons = mask;
    s.throttle_text = describe_throttle_reasons(mask);
  }
  return s;
}

std::optional<double> Nvml::utilization_pct(int device) const {
  Device d = handle(device);
  auto get = symbol<UtilizationFn>(library_, "nvmlDeviceGetUtilizationRates");
  Utilization u;
  if (d == nullptr || get == nullptr || get(d, &u) != 0) return std::nullopt;
  return u.gpu;
}

std::optional<int64_t> Nvml::other_compute_processes(int device) const {
  Device d = handle(device);
  auto get = symbol<ProcessesFn>(library_, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (d == nullptr || get == nullptr) return std::nullopt;
  std::vector<ProcessInfo> infos(64);
  auto count = static_cast<unsigned>(infos.size());
  if (get(d, &count, infos.data()) != 0) return std::nullopt;
  // The caller holds a context on this GPU, so one of the processes is this one, whether NVML
  // lists it under its own pid or (inside a container) under the host's.
  return std::max<int64_t>(0, static_cast<int64_t>(count) - 1);
}

bool clock_fell(double first_mhz, double end_mhz, std::optional<uint64_t> reasons) {
  constexpr double kFallRatio = 0.95;
  // hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown
  constexpr uint64_t kSlowdowns = 0x8 | 0x20 | 0x40 | 0x80;
  const bool slowed = reasons && (*reasons & kSlowdowns) != 0;
  return end_mhz < kFallRatio * first_mhz || slowed;
}

}  // namespace lpbench::env
