#pragma once

#include <cstdint>
#include <string>

#include "base/env/process.h"
#include "base/store/records.h"

namespace lpbench::testing {

// A run of `recipe` in sweep `sweep_id`, started by this process (so the store sees it alive
// until it is finished), with the provenance fields a store insists on; tests set the rest.
inline store::RunRecord test_run_record(int64_t sweep_id, const std::string& recipe,
                                        const std::string& device = "cpu") {
  const env::ProcessIdentity self = env::current_process();
  store::RunRecord r;
  r.sweep_id = sweep_id;
  r.workload = "model:tiny";
  r.recipe = recipe;
  r.device = device;
  r.config_json = "{}";
  r.started_at = "2026-11-22T00:00:00.000Z";
  r.pid = self.pid;
  r.process_start = self.start;
  r.provenance.host = env::host_name();
  r.provenance.git_commit = "abc";
  r.provenance.torch_version = "2.11.0";
  r.provenance.lpbench_version = "0";
  return r;
}

}  // namespace lpbench::testing
