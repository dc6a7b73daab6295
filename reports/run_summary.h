#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/store/records.h"
#include "harness/timing/stats.h"

namespace lpbench::reports {

// Whether a recipe's step time differs from its baseline's beyond the measured spread.
enum class SpeedVerdict { faster, slower, same };
std::string_view to_string(SpeedVerdict verdict);
// "1.25× faster", "0.85× slower", "1.01× same": two decimals, three where two would print 1.00
// beside a verdict of faster or slower ("0.996× slower", not "1.00× slower").
std::string speedup_text(double ratio, SpeedVerdict verdict);

// A run's figures, computed from its stored steps, as every report shows them.
struct RunSummary {
  store::RunRecord run;
  int64_t steps_recorded = 0;
  timing::Summary step_ms;  // measured steps only (warm-up left out)
  std::optional<double> tokens_per_s;
  std::optional<double> final_loss;  // mean over the last 10 % of steps
  std::optional<double> peak_mem_gib;
  // Against the bf16 run of the same workload in the same sweep, where there is one.
  std::optional<double> speedup;
  std::optional<SpeedVerdict> verdict;
  std::optional<double> loss_gap_pct;
};

// The share of the last steps that "final loss" averages over.
inline constexpr double kFinalLossShare = 0.10;

RunSummary summarize_run(const store::RunRecord& run, const std::vector<store::StepRecord>& steps);

// The loss averaged over the last `share` of the steps (at least one), NaN steps included, so a
// run that went non-finite does not report a finite final loss.
std::optional<double> final_loss(const std::vector<store::StepRecord>& steps, double share);

// Faster when the recipe's p90 is below the baseline's p10, slower when its p10 is above the
// baseline's p90, the same otherwise: a speedup is claimed only beyond the spread.
SpeedVerdict compare_spread(const timing::Summary& candidate, const timing::Summary& baseline);

// Fills speedup, verdict and loss gap of every run against the bf16 run of its workload.
void compare_with_bf16(std::vector<RunSummary>& runs);

}  // namespace lpbench::reports
