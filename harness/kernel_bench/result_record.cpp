#include "harness/kernel_bench/result_record.h"

#include <nlohmann/json.hpp>

#include "base/stats/stats.h"

namespace lpbench::kernel_bench {

store::KernelResultRecord make_record(const KernelCase& c, const CaseOutcome& outcome,
                                      const SuiteSettings& settings, int64_t sweep_id,
                                      const std::optional<std::string>& gpu_name) {
  store::KernelResultRecord r;
  r.sweep_id = sweep_id;
  r.name = c.name;
  r.op = std::string(to_string(c.op));
  r.model = c.model;
  if (c.op == Op::gemm) {
    r.part = c.part;
    r.gemm = std::string(kernels::to_string(*c.kind));
  }
  r.recipe = c.recipe;
  r.variant = std::string(to_string(c.variant));
  r.backend = outcome.backend.empty() ? "none" : outcome.backend;
  r.m = c.m;
  r.n = c.n;
  r.k = c.k;
  r.gpu_name = gpu_name;

  nlohmann::json config{
      {"tokens", c.tokens},
      {"device", settings.device},
      {"timer", settings.timer},
      {"iterations", settings.iterations},
      {"warmup_passes", settings.warmup_passes},
      {"buffer_sets", outcome.buffer_sets},
      {"l2_bytes", settings.l2_bytes ? nlohmann::json(*settings.l2_bytes) : nlohmann::json()},
      {"flops", c.flops()},
      {"bytes", c.bytes()},
      {"int8_gemm", settings.int8_gemm},
      {"git_commit", settings.git_commit},
      {"torch_version", settings.torch_version},
  };
  if (c.op == Op::gemm) {
    config["spec"] = kernels::describe(c.spec);
    config["lhs_transposed"] = c.lhs_transposed;
    config["rhs_transposed"] = c.rhs_transposed;
  } else {
    config["format"] = std::string(kernels::to_string(c.quant.format));
    config["blocks"] = describe_blocks(c.quant);
    config["operands"] = c.part;
    config["with_transpose"] = c.with_transpose;
  }
  if (outcome.check) {
    config["validation"] = {{"error", outcome.check->error},
                            {"tolerance", outcome.check->tolerance},
                            {"ok", outcome.check->ok}};
  }

  const bool timed = outcome.status == "ok" && !outcome.samples_ms.empty();
  r.status = outcome.status == "ok" && !timed ? "failed" : outcome.status;
  if (!outcome.reason.empty()) {
    r.reason = outcome.reason;
  } else if (!timed && outcome.status == "ok") {
    r.reason = "no timed iteration was recorded";
  }
  r.samples = static_cast<int64_t>(outcome.samples_ms.size());
  r.samples_ms = outcome.samples_ms;
  r.repetitions = outcome.repetitions_seen;
  if (timed) {
    const stats::Summary s = stats::summarize(outcome.samples_ms);
    r.median_ms = s.median;
    r.p10_ms = s.p10;
    r.p90_ms = s.p90;
    const double seconds = s.median / 1e3;
    if (c.op == Op::gemm && seconds > 0) r.tflops = c.flops() / seconds / 1e12;
    if (seconds > 0) r.gb_s = c.bytes() / seconds / 1e9;
    r.mean_ms = s.mean;
    // An iteration calls the case once per buffer set; the CPU time is per call, like the times.
    if (outcome.cpu_iterations > 0 && outcome.buffer_sets > 0) {
      r.cpu_ms = 1e3 * outcome.cpu_seconds / static_cast<double>(outcome.cpu_iterations) /
                 static_cast<double>(outcome.buffer_sets);
    }
    config["min_ms"] = s.min;
    config["max_ms"] = s.max;
  }
  r.config_json = config.dump();
  return r;
}

}  // namespace lpbench::kernel_bench
