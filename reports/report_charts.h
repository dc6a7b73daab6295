#pragma once

#include <optional>
#include <vector>

#include "base/store/store.h"
#include "reports/document.h"
#include "reports/sweep_report.h"

// The charts of a report, as data: which figures a sweep and a nightly series get. Each returns
// nothing where there is nothing to draw, so no chart is ever empty.
namespace lpbench::reports {

// A run's recorded curves, beside its summary.
struct RunCurves {
  const RunSummary* summary = nullptr;
  std::vector<store::StepRecord> steps;
  std::vector<store::EvalRecord> evals;
};
std::vector<RunCurves> load_curves(const store::Store& store, const SweepReport& report);

// Training loss per step of every run on one chart, validation losses as markers.
std::optional<Figure> loss_figure(const SweepReport& report, const std::vector<RunCurves>& runs);
// Per step, (loss − bf16's loss) / bf16's loss of every other recipe, raw and smoothed.
std::optional<Figure> loss_gap_figure(const SweepReport& report,
                                      const std::vector<RunCurves>& runs);
// Speedup over bf16 per workload and recipe, with the range the p10–p90 spreads allow.
std::optional<Figure> speedup_figure(const SweepReport& report);
// Peak memory per run with the p10–p90 of its per-step peaks; GPU runs only.
std::optional<Figure> memory_figure(const SweepReport& report, const std::vector<RunCurves>& runs);

// One nightly sweep's runs, summarized.
struct NightlySweep {
  store::SweepRecord sweep;
  std::vector<RunSummary> runs;
};
std::vector<NightlySweep> load_nightly(const store::Store& store);
// Median step_ms and tokens/s per workload and recipe over time, with their p10–p90.
std::vector<Figure> nightly_figures(const std::vector<NightlySweep>& nightly);

}  // namespace lpbench::reports
