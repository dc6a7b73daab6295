#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/store/store.h"
#include "harness/config/run_config.h"

namespace lpbench::runner {

struct RunOutcome {
  int64_t run_id = 0;
  std::string recipe;
  store::RunStatus status = store::RunStatus::running;
  std::optional<std::string> error;
};

struct SweepOutcome {
  int64_t sweep_id = 0;
  std::vector<RunOutcome> runs;
  bool all_ok() const;
};

// Runs one workload under each recipe of `run`, recording the sweep, its runs and every step in
// the store as it goes. A recipe that fails, diverges or runs out of memory ends its own run
// with that status and the others go on. The sweep is recorded with `label` (a series such as
// "nightly"), where given. Throws only for store failures.
SweepOutcome run_sweep(const config::ResolvedRun& run, store::Store& store,
                       const std::string& command_line,
                       const std::optional<std::string>& label = std::nullopt);

}  // namespace lpbench::runner
