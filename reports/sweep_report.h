#pragma once

#include <string>
#include <vector>

#include "harness/store/store.h"
#include "reports/run_summary.h"

namespace lpbench::reports {

struct SweepReport {
  store::SweepRecord sweep;
  std::vector<RunSummary> runs;
};

SweepReport build_sweep_report(const store::Store& store, const store::SweepRecord& sweep);

// The table of one sweep: workload, recipe, steps, median step_ms (p10–p90), tokens/s, speedup
// over bf16 with its verdict, final loss and loss gap, and the notes that keep it honest.
std::string render_sweep_markdown(const SweepReport& report);

}  // namespace lpbench::reports
