#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/store/store.h"

namespace lpbench::reports {

// The kernel suite's stored rows in Google Benchmark's JSON output format ("context" and
// "benchmarks"), so that its tools (compare.py) and dashboards read lpbench's kernel results.
// One benchmark per ok row, real_time = cpu_time = the median in ms (manual GPU time), with
// the p10/p90, TFLOP/s and GB/s as counters; skipped and failed rows carry "error_occurred" and
// their reason, as Google Benchmark writes them. `sweep_id` picks one sweep (default: all).
std::string kernels_gbench_json(const store::Store& store, std::optional<int64_t> sweep_id);

}  // namespace lpbench::reports
