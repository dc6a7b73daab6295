#pragma once

#include <cstdint>
#include <optional>

// How busy this machine is besides lpbench: what a shared CI runner or GPU host adds to a
// measurement's noise, read from /proc (Linux).
namespace lpbench::env {

// CPU time counters at one moment, in clock ticks.
struct CpuTimes {
  int64_t busy = 0;   // every CPU's non-idle time (user, nice, system, irq, softirq, steal)
  int64_t total = 0;  // every CPU's time, idle included
  int64_t self = 0;   // this process's user and system time (all its threads)
  bool valid = false;
};

CpuTimes cpu_times();

// The share of all CPUs' time between `from` and `to` that other processes (and the hypervisor,
// as steal) used: their busy time less this process's, over the total. None when either sample
// could not be read or no time passed.
std::optional<double> others_cpu_share(const CpuTimes& from, const CpuTimes& to);

// The 1-minute load average (runnable and waiting tasks, this process's threads included).
std::optional<double> load_average_1m();

// CPUs online now.
int64_t online_cpus();

}  // namespace lpbench::env
