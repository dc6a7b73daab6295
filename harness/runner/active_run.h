#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/env/machine_load.h"
#include "base/store/records.h"
#include "harness/config/run_config.h"
#include "harness/runner/instability.h"
#include "harness/runner/step_graph.h"
#include "harness/runner/sweep_context.h"
#include "kernels/recipe.h"
#include "workloads/levels/workload.h"

namespace lpbench::runner {

// One recipe's run of one workload while the sweep is under way.
struct ActiveRun {
  const kernels::Recipe* recipe = nullptr;
  size_t index = 0;  // in the sweep's recipes
  int64_t run_id = 0;
  std::unique_ptr<workloads::Workload> workload;
  // --cuda-graph: the step as captured after the first one, replayed for the steps after it.
  std::unique_ptr<StepGraph> graph;
  store::RunStatus status = store::RunStatus::running;
  std::optional<std::string> error;
  // Device memory this run holds between its steps (weights, gradients, optimizer state).
  // Interleaved recipes share the allocator, so a run's peak is computed from this rather than
  // read off the allocator's process-wide peak.
  int64_t resident_bytes = 0;
  std::optional<double> first_clock_mhz;
  std::optional<int64_t> gpu_others_at_start;
  env::CpuTimes cpu_at_start;
  InstabilityWatch instability;
};

// Builds recipe `index`'s workload and records its run (status running), with what it
// quantized. A workload that cannot be built is recorded all the same, ended failed or oom.
ActiveRun start_run(SweepContext& context, const config::ResolvedWorkload& workload, size_t index);

// Records recipe `index`'s run as interrupted without building it: the sweep was stopped before
// its turn came (the recipes that run one after another).
ActiveRun skip_run(SweepContext& context, const config::ResolvedWorkload& workload, size_t index);

// Ends a run: frees its workload and the allocator's cache, records the machine's load and the
// status, and says so when it is not ok.
void end_run(SweepContext& context, ActiveRun& active, store::RunStatus status,
             std::optional<std::string> error);

// Ends a run that is still running: ok, or interrupted where a signal stopped the sweep.
void finish_run(SweepContext& context, ActiveRun& active);

bool keep_going(const ActiveRun& active);

// torch's messages carry a C++ backtrace; the store keeps the message.
std::string error_text(const std::exception& error);
// Whether an exception says the device (or the host) ran out of memory.
bool out_of_memory(const std::exception& error);

}  // namespace lpbench::runner
