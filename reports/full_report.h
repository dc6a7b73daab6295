#pragma once

#include <string>
#include <vector>

#include "base/store/store.h"
#include "reports/document.h"

namespace lpbench::reports {

// The report `lpbench report --out` writes: per sweep its table and notes, the loss curves, the
// loss gap to bf16, the speedup and the peak memory with their spread, the hotspots (--regions),
// the quantization diagnostics and the kernel suite's table where the sweep has them; then, where
// the database holds nightly sweeps, their history. Charts are described, not yet drawn.
Document build_report(const store::Store& store, const std::vector<store::SweepRecord>& sweeps,
                      const std::string& db_path);

// Draws every figure of `document` with gnuplot into its `svg`.
void draw_figures(Document& document, const std::string& gnuplot);

}  // namespace lpbench::reports
