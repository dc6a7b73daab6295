#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/store/records.h"
#include "harness/runner/active_run.h"
#include "harness/runner/sweep_context.h"

// The machine around a run: the GPU's clocks (a run whose SM clock fell is flagged, not averaged
// in quietly) and how busy the machine was besides lpbench (a run measured beside other work is
// flagged as contended, and compare does not call a regression on its evidence alone).
namespace lpbench::runner {

// Other processes using this share of all CPUs' time, or more, over a run make it contended: on
// a 2-core runner that is one busy thread a fifth of the time; a quiet machine's background stays
// under a few percent.
inline constexpr double kContendedCpuShare = 0.10;

// The load at the start of a run, once its workload is built.
void watch_start(SweepContext& context, ActiveRun& active);
// The GPU's clocks at the first measured step.
void watch_first_measured(SweepContext& context, ActiveRun& active, int64_t step);
// The clocks and the load at the end, and the verdicts on both.
void watch_end(SweepContext& context, ActiveRun& active);

// The SM clock as one step runs: read between the step's stop event and the wait for it, while
// the GPU runs the step's last kernels (the host is ahead of it by then) or has just finished
// them, untimed. NVML renews the reading about every 0.1 s (docs/perf-log.md §56): a layer's
// step of a few ms carries the clock of the steps around it (an H200's boost, then its power
// cap from about 1 s of load on), a model's step of 0.1 s its own. Empty on a CPU or without
// NVML.
std::optional<double> step_sm_clock(const SweepContext& context);

// Why a run counts as contended, from its end sample and the other GPU processes seen at its
// start; none when it does not.
std::optional<std::string> contention(const store::LoadSampleRecord& end,
                                      std::optional<int64_t> gpu_others_at_start);

}  // namespace lpbench::runner
