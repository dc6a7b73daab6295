#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/store/store.h"
#include "reports/compare.h"

// The pieces that compare.cpp, compare_kernels.cpp, tracked_ratios.cpp and first_bad_night.cpp
// share; nothing outside reports/compare* includes this.
namespace lpbench::reports::detail {

// Runs (or nights) of other sweeps needed before their run-to-run spread is estimated.
inline constexpr size_t kRunsForSpread = 3;
// Across sweeps, a candidate inside the baseline nights' prediction interval is SAME where that
// interval's half width is at most this many times the threshold of an effect, UNSURE beyond.
inline constexpr double kSpreadForSame = 5.0;

// One night's figure of one metric: a sweep, when it started, the commit it measured, and the
// value (with the range its own spread allows, for a speedup; the value itself otherwise).
struct Night {
  int64_t sweep_id = 0;
  std::string started_at;
  std::string commit;
  double value = 0.0;
  double low = 0.0;
  double high = 0.0;
};

// What one side holds for one workload and recipe (or one kernel case). `ok` and
// `final_losses` point into `runs`, so a Side moves but is never copied.
struct Side {
  Side() = default;
  Side(const Side&) = delete;
  Side(Side&&) = default;
  std::vector<store::RunRecord> runs;  // every selected run, whatever its status
  std::vector<const store::RunRecord*> ok;
  size_t ok_count = 0;               // runs or kernel results that ended ok
  std::vector<double> step_ms;       // measured steps (or a kernel's timed samples), pooled
  std::vector<double> tokens_per_s;  // per measured step
  std::vector<double> run_median_ms;
  std::vector<double> run_median_tokens_per_s;
  std::vector<double> peaks;  // peak_mem_gib per ok run, where recorded
  std::vector<std::pair<const store::RunRecord*, double>> final_losses;
  // Per night (sweep), for naming the night a regression began.
  std::vector<Night> nights_ms;
  std::vector<Night> nights_tokens_per_s;
  std::vector<Night> nights_failed;  // 1 where the run did not end ok, else 0
  std::vector<Night> nights_peak;
  std::vector<Night> nights_loss;
};

// Step time, kernel time or tokens/s: the U test, the speedup rule and, across sweeps, the
// baseline's run-to-run spread (see compare.cpp).
MetricResult compare_speed(Metric metric, const Side& b, const Side& c, bool across_sweeps,
                           const ComparePolicy& policy);

// A tracked ratio, one value per night: UNSURE with fewer baseline nights than a verdict needs
// (three for a speedup, one for a loss gap, which is deterministic for a seed); SLOWER when the
// candidate's speedup falls below every baseline night's by at least the minimum effect and its
// own range lies below their median; WORSE when the loss gap exceeds every baseline night's by
// more than the loss band; the mirror images read FASTER and BETTER; SAME otherwise, where the
// candidate lies within the baseline nights' range or within the threshold of their median.
MetricResult compare_ratio(Metric metric, const std::vector<Night>& baseline,
                           const std::vector<Night>& candidate, const ComparePolicy& policy);

// The speedup of `run` over the BF16 run of the same workload and step size in its own sweep
// (the one speedup rule, reports/speedup.h), or nothing where there is none that ended ok.
std::optional<Night> speedup_night(const store::Store& store, const store::RunRecord& run);
// `run`'s final loss over that BF16 run's, minus 1.
std::optional<Night> loss_gap_night(const store::Store& store, const store::RunRecord& run);
// A kernel case's speedup over its BF16 twin (same model, product and shape) among
// `sweep_results`, the results of its own sweep.
std::optional<Night> kernel_speedup_night(
    const store::Store& store, const store::KernelResultRecord& result,
    const std::vector<store::KernelResultRecord>& sweep_results);

// For a regressed metric: the nights of the baseline, oldest first, are read back from the
// newest; each that lies nearer the candidate's value than the baseline's median is bad too.
// Names the first bad night and the last good one with their commits; empty when the
// baseline holds no night.
std::string name_first_bad_night(const std::vector<Night>& baseline,
                                 const std::vector<Night>& candidate);

// The kernel suite's cases present on both sides, one group each.
std::vector<GroupResult> compare_kernel_results(
    const store::Store& store, const std::vector<store::KernelResultRecord>& baseline,
    const std::vector<store::KernelResultRecord>& candidate, const ComparePolicy& policy,
    const std::string& baseline_spec, const std::string& candidate_spec,
    std::vector<std::string>& notes, std::vector<std::string>& warnings);

// When a sweep (a night) started; empty for a sweep that is not there.
std::string sweep_started_at(const store::Store& store, int64_t sweep_id);

// "3 runs", "1 run".
std::string runs_text(size_t runs);
// "+4.2 %" (a signed change), "4 %" (a tolerance, written after a ±), "1.02–1.09".
std::string percent(double fraction, int decimals = 1);
std::string magnitude(double fraction, int decimals = 0);
std::string range_text(const std::vector<double>& values, std::string_view format);

}  // namespace lpbench::reports::detail
