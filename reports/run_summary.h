#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/stats/stats.h"
#include "base/store/records.h"
#include "base/store/store.h"
#include "reports/speedup.h"

namespace lpbench::reports {

// A run's figures, computed from its stored steps, as every report shows them.
struct RunSummary {
  store::RunRecord run;
  int64_t steps_recorded = 0;
  stats::Summary step_ms;  // measured steps only (warm-up left out)
  // The SM clock the measured steps ran at, where the store has it (a GPU with NVML).
  std::optional<stats::Summary> sm_clock_mhz;
  std::optional<double> tokens_per_s;
  std::optional<double> final_loss;  // mean over the last 10 % of steps
  std::optional<double> peak_mem_gib;
  // Against the bf16 run of the same workload in the same sweep, where there is one and both
  // runs ended ok (reports/speedup.h); otherwise `no_speedup` says why.
  std::optional<Speedup> speedup;
  std::optional<std::string> no_speedup;
  std::optional<double> loss_gap_pct;
  // Measured steps during which the GPU's caching allocator released its cache to retry an
  // allocation (store::kAllocationRetriesMetric; set by summarize_stored_run): their times
  // include that, so the run's figures are flagged.
  int64_t steps_with_allocation_retries = 0;
};

// The share of the last steps that "final loss" averages over.
inline constexpr double kFinalLossShare = 0.10;

RunSummary summarize_run(const store::RunRecord& run, const std::vector<store::StepRecord>& steps);

// A stored run's summary as every report shows it: summarize_run over its steps, with the
// measured steps (a warm-up step's retries are not the figures') that its
// store::kAllocationRetriesMetric rows name counted.
RunSummary summarize_stored_run(const store::Store& store, const store::RunRecord& run);

// The loss averaged over the last `share` of the steps (at least one), NaN steps included, so a
// run that went non-finite does not report a finite final loss.
std::optional<double> final_loss(const std::vector<store::StepRecord>& steps, double share);

// A run's final loss, the one rule every report and verdict uses: the model level's loss over
// the last kFinalLossShare of its steps; nullopt for the levels that train on no loss (gemm,
// linear, layer record none, and a missing loss there is no divergence).
std::optional<double> run_final_loss(const store::RunRecord& run,
                                     const std::vector<store::StepRecord>& steps);

// Whether the run's steps after the first were replays of one captured CUDA graph (`lpbench run
// --cuda-graph`, recorded in its config): the one rule the sweep table's note and compare's
// "alike" check both read.
bool replayed_from_graph(const store::RunRecord& run);

// Fills the speedup and loss gap of every run against the bf16 run of its workload and sweep.
// A bf16 run that did not end ok is no baseline, and a run that did not end ok gets no speedup.
void compare_with_bf16(std::vector<RunSummary>& runs);

}  // namespace lpbench::reports
