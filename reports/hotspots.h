#pragma once

#include <string>
#include <vector>

#include "base/store/store.h"
#include "reports/sweep_report.h"
#include "reports/text_table.h"

namespace lpbench::reports {

// Where each recipe's step time goes, from the regions a `--regions` run recorded: per workload,
// one row per region and one column per recipe, with the mean milliseconds per measured step and
// the share of the step. Regions nest (a gemm is inside a linear inside a layer), so shares do not
// add up to 100 %. Empty when no run of the sweep recorded regions.
std::string render_hotspots(const store::Store& store, const SweepReport& report);

// The same tables, one per workload, for a report document (report.md and report.html).
struct HotspotTable {
  std::string workload;
  TextTable table;
};
std::vector<HotspotTable> hotspot_tables(const store::Store& store, const SweepReport& report);

// How to read the hotspot tables: said once under them.
extern const char* const kHotspotReading;

}  // namespace lpbench::reports
