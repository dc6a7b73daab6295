#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/store/records.h"
#include "harness/kernel_bench/case_table.h"
#include "harness/kernel_bench/validation.h"

namespace lpbench::kernel_bench {

// What happened to one case over all its repetitions.
struct CaseOutcome {
  std::string status = "ok";  // ok, failed (validation or an error while running), skipped
  std::string reason;
  std::vector<double> samples_ms;  // one per timed iteration: mean milliseconds per call
  std::string backend;
  int64_t buffer_sets = 0;
  std::optional<Check> check;
  int64_t repetitions_seen = 0;
  // This process's CPU time over the timed iterations, as Google Benchmark measured it.
  double cpu_seconds = 0.0;
  int64_t cpu_iterations = 0;
  bool written = false;
};

// How the suite ran, recorded with every row.
struct SuiteSettings {
  std::string device;  // "cpu", "cuda:0"
  std::string timer;   // "cuda-events" or "host-clock"
  std::optional<int64_t> l2_bytes;
  int64_t iterations = 0;
  int64_t warmup_passes = 0;
  std::string int8_gemm;
  std::string git_commit;
  std::string torch_version;
};

// The store's row for a case: median, p10 and p90 of the per-iteration samples, TFLOP/s (TOP/s
// for INT8) and GB/s at the median, and a config_json that says how it was measured. A case that
// was not timed keeps its status and reason and no figures.
store::KernelResultRecord make_record(const KernelCase& c, const CaseOutcome& outcome,
                                      const SuiteSettings& settings, int64_t sweep_id,
                                      const std::optional<std::string>& gpu_name);

}  // namespace lpbench::kernel_bench
