#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/env/provenance.h"
#include "base/store/store.h"
#include "harness/config/run_config.h"
#include "harness/runner/allocator_memory.h"
#include "harness/runner/progress.h"
#include "harness/timing/step_timer.h"

namespace lpbench::runner {

// What every part of a sweep shares: the resolved run, the store, the device's allocator and
// timer, the provenance every run records, and the progress line.
struct SweepContext {
  SweepContext(const config::ResolvedRun& resolved, store::Store& db)
      : run(resolved), store(db), memory(resolved.device), timer(resolved.device) {}

  const config::ResolvedRun& run;
  store::Store& store;
  AllocatorMemory memory;
  timing::StepTimer timer;
  env::Provenance provenance;
  int64_t sweep_id = 0;
  std::unique_ptr<Progress> progress;  // of the workload under way

  void message(const std::string& text) const {
    if (progress) progress->message(text);
  }
};

}  // namespace lpbench::runner
