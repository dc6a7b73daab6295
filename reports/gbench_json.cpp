#include "reports/gbench_json.h"

#include <nlohmann/json.hpp>

namespace lpbench::reports {

// The shape of Google Benchmark's own JSON (what its tools/compare.py reads), holding only what
// the kernel suite measured: real_time is the mean wall time per call over the timed calls (as
// Google Benchmark computes it for manual timing), cpu_time this process's CPU time per call,
// iterations the timed calls' count and repetitions the Google Benchmark repetitions pooled into
// them. lpbench's own figures (median, p10, p90, rates) ride along as extra fields. A case
// without a time (failed, skipped, or stored before lpbench recorded CPU time) has no time
// fields, so compare.py leaves it out rather than compare a made-up number.
std::string kernels_gbench_json(const store::Store& store, std::optional<int64_t> sweep_id) {
  using nlohmann::json;
  json benchmarks = json::array();
  std::string gpu;
  for (const store::KernelResultRecord& r : store.kernel_results(sweep_id)) {
    if (r.gpu_name) gpu = *r.gpu_name;
    json b = {{"name", r.name},          {"run_name", r.name},
              {"run_type", "iteration"}, {"threads", 1},
              {"time_unit", "ms"},       {"lpbench_sweep", r.sweep_id},
              {"recipe", r.recipe},      {"variant", r.variant},
              {"backend", r.backend},    {"lpbench_status", r.status}};
    if (r.repetitions) b["repetitions"] = *r.repetitions;
    const bool timed = r.status == "ok" && r.median_ms && r.mean_ms && r.cpu_ms;
    if (timed) {
      b["iterations"] = r.samples;
      b["real_time"] = *r.mean_ms;
      b["cpu_time"] = *r.cpu_ms;
      b["median_ms"] = *r.median_ms;
      if (r.p10_ms) b["p10_ms"] = *r.p10_ms;
      if (r.p90_ms) b["p90_ms"] = *r.p90_ms;
      if (r.tflops) b["TFLOP/s"] = *r.tflops;
      if (r.gb_s) b["GB/s"] = *r.gb_s;
    } else {
      b["error_occurred"] = true;
      b["error_message"] = r.status == "ok"
                               ? std::string(
                                     "recorded before lpbench stored the mean and CPU time "
                                     "per call (schema 5): no figure Google Benchmark's "
                                     "tools can compare")
                               : r.reason.value_or(r.status);
    }
    benchmarks.push_back(std::move(b));
  }
  const json out = {{"context", {{"library", "lpbench"}, {"gpu", gpu}, {"time_unit", "ms"}}},
                    {"benchmarks", benchmarks}};
  return out.dump(2) + "\n";
}

}  // namespace lpbench::reports
