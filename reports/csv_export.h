#pragma once

#include <string>

#include "base/store/store.h"

namespace lpbench::reports {

// The store's tables as CSV (RFC 4180: a header row, cells quoted where they hold a comma, a
// quote or a line break), for spreadsheets and dashboards. Numbers are written so that they read
// back exactly; a missing value (NULL, or a NaN loss) is an empty cell.
std::string sweeps_csv(const store::Store& store);
std::string runs_csv(const store::Store& store);
std::string steps_csv(const store::Store& store);
std::string evals_csv(const store::Store& store);
// The kernel suite's rows (lpbench-kernels), one per case and sweep.
std::string kernels_csv(const store::Store& store);

}  // namespace lpbench::reports
