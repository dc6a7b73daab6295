#include "reports/gbench_json.h"

#include <nlohmann/json.hpp>

namespace lpbench::reports {

std::string kernels_gbench_json(const store::Store& store, std::optional<int64_t> sweep_id) {
  using nlohmann::json;
  json benchmarks = json::array();
  std::string gpu;
  for (const store::KernelResultRecord& r : store.kernel_results(sweep_id)) {
    if (r.gpu_name) gpu = *r.gpu_name;
    json b = {{"name", r.name},          {"run_name", r.name},    {"run_type", "iteration"},
              {"repetitions", 1},        {"repetition_index", 0}, {"threads", 1},
              {"iterations", r.samples}, {"time_unit", "ms"},     {"lpbench_sweep", r.sweep_id},
              {"recipe", r.recipe},      {"variant", r.variant},  {"backend", r.backend}};
    if (r.status == "ok" && r.median_ms) {
      b["real_time"] = *r.median_ms;
      b["cpu_time"] = *r.median_ms;
      if (r.p10_ms) b["p10_ms"] = *r.p10_ms;
      if (r.p90_ms) b["p90_ms"] = *r.p90_ms;
      if (r.tflops) b["TFLOP/s"] = *r.tflops;
      if (r.gb_s) b["GB/s"] = *r.gb_s;
    } else {
      b["error_occurred"] = true;
      b["error_message"] = r.reason.value_or(r.status);
      b["real_time"] = 0.0;
      b["cpu_time"] = 0.0;
    }
    benchmarks.push_back(std::move(b));
  }
  const json out = {{"context", {{"library", "lpbench"}, {"gpu", gpu}, {"time_unit", "ms"}}},
                    {"benchmarks", benchmarks}};
  return out.dump(2) + "\n";
}

}  // namespace lpbench::reports
