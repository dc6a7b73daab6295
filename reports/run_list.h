#pragma once

#include <string>

#include "base/store/store.h"

namespace lpbench::reports {

// One line per run: id, sweep, workload, recipe, device, status, steps, start, error.
std::string render_run_list(const store::Store& store);

}  // namespace lpbench::reports
