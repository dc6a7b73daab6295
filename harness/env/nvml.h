#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lpbench::env {

// The GPU's state at one moment, as NVML reports it; fields NVML does not answer stay empty.
struct GpuSample {
  std::optional<double> sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
  // NVML's clock event reasons (thermal or power slowdown, ...), as a bit mask and as words.
  std::optional<uint64_t> throttle_reasons;
  std::string throttle_text;
};

// NVML, loaded at run time (dlopen), so lpbench runs on machines without an NVIDIA driver:
// there every query answers nothing.
class Nvml {
 public:
  static Nvml& instance();
  bool available() const { return available_; }
  std::optional<std::string> driver_version() const;
  std::optional<double> max_sm_clock_mhz(int device) const;
  GpuSample sample(int device) const;
  // The SM clock now: one query, for a sample a step.
  std::optional<double> sm_clock_mhz(int device) const;
  // The share of the last sample period in which a kernel ran on the GPU, in percent (every
  // process's kernels, lpbench's own included).
  std::optional<double> utilization_pct(int device) const;
  // Compute processes on the GPU other than this one, which must hold a context on it.
  std::optional<int64_t> other_compute_processes(int device) const;

 private:
  Nvml();
  void* handle(int device) const;
  // The SM clock that NVML's `query` (a ClockInfo function) answers.
  std::optional<double> sm_clock(const char* query, int device) const;
  bool available_ = false;
  void* library_ = nullptr;
};

// The reasons NVML can give, in words: "sw_power_cap, hw_thermal_slowdown", or "" for none that
// slow the clocks (idle and application-clock settings are left out).
std::string describe_throttle_reasons(uint64_t mask);

// Whether a run's timings are flagged: the SM clock at the end is more than 5 % below the one at
// the first measured step, or NVML names heat or a hardware brake. A software power cap alone is
// not flagged: it is where a GPU at full load settles (an H100 under large GEMMs runs at
// 1.4-1.8 GHz against its 700 W cap), the same for every recipe of an interleaved sweep.
bool clock_fell(double first_mhz, double end_mhz, std::optional<uint64_t> reasons);

}  // namespace lpbench::env
