#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/stats/stats.h"
#include "base/store/records.h"

// The one rule by which lpbench turns two timed series into a speedup, used by the sweep report,
// its chart, the kernel table, reproduce and compare.
namespace lpbench::reports {

// Faster or slower only when the spreads do not overlap: a speedup is claimed only beyond the
// measured noise.
enum class SpeedVerdict { faster, slower, same };
std::string_view to_string(SpeedVerdict verdict);

struct Speedup {
  double ratio = 0.0;  // the baseline's median over the candidate's, per unit of work
  double low = 0.0;    // the baseline's p10 over the candidate's p90
  double high = 0.0;   // the baseline's p90 over the candidate's p10
  SpeedVerdict verdict = SpeedVerdict::same;  // faster when low > 1, slower when high < 1
};

// `work_ratio`: the candidate's work per step over the baseline's (the ratio of tokens per step
// where the steps differ in size; 1 where they hold the same work). Both series need a measured
// step.
Speedup speedup(const stats::Summary& baseline, const stats::Summary& candidate,
                double work_ratio = 1.0);

// "1.25× faster", "0.85× slower", "1.01× same": two decimals, three where two would print 1.00
// beside a verdict of faster or slower ("0.996× slower", not "1.00× slower").
std::string speedup_text(const Speedup& speedup);
// "1.25× (1.18–1.31)": the ratio with its range.
std::string speedup_range_text(const Speedup& speedup);

// Why a run's steps cannot stand on one side of a speedup, or none: only a run that ended ok
// with measured steps counts (a run that diverged, ran out of memory, failed or was interrupted
// measured something other than the workload's steady state).
std::optional<std::string> speedup_refusal(const store::RunRecord& run,
                                           const stats::Summary& step_ms);

}  // namespace lpbench::reports
