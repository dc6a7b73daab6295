#pragma once

#include <string>

#include "harness/store/store.h"
#include "reports/sweep_report.h"

namespace lpbench::reports {

// Where each recipe's step time goes, from the regions a `--regions` run recorded: per workload,
// one row per region and one column per recipe, with the mean milliseconds per measured step and
// the share of the step. Regions nest (a gemm is inside a linear inside a layer), so shares do not
// add up to 100 %. Empty when no run of the sweep recorded regions.
std::string render_hotspots(const store::Store& store, const SweepReport& report);

}  // namespace lpbench::reports
