#include "reports/throughput.h"

#include <nlohmann/json.hpp>

#include "base/env/gpu_peaks.h"

namespace lpbench::reports {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kAdamBytesPerParameter = 28.0;  // read p, g, m, v; write p, m, v (FP32)

double number(const nlohmann::json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j.at(a).contains(b) || !j.at(a).at(b).is_number()) return 0.0;
  return j.at(a).at(b).get<double>();
}

}  // namespace

Throughput throughput(const RunSummary& s) {
  Throughput t;
  if (s.step_ms.count == 0) return t;
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(s.run.config_json);
  } catch (const nlohmann::json::exception&) {
    t.note = "no configuration recorded";
    return t;
  }
  const double seconds = s.step_ms.median / 1000.0;
  if (config.contains("flops_per_step") && config["flops_per_step"].is_number()) {
    t.tflops = config["flops_per_step"].get<double>() / seconds / 1e12;
  }
  if (!s.run.device.starts_with("cuda")) {
    t.note = "CPU run: no MFU";
    return t;
  }
  const std::string gpu = s.run.provenance.gpu_name.value_or("");
  const std::optional<env::GpuPeaks> peaks = env::gpu_peaks(gpu);
  if (!peaks) {
    t.note = "no peak figures for GPU '" + gpu + "': no MFU or roofline";
    return t;
  }
  if (t.tflops) t.mfu_pct = 100.0 * *t.tflops / peaks->bf16_tflops;

  const double bf16 = number(config, "gemm_flops_per_step", "bf16");
  const double int8 = number(config, "gemm_flops_per_step", "int8");
  const double fp8 = number(config, "gemm_flops_per_step", "fp8");
  if (fp8 > 0 && peaks->fp8_tflops <= 0) {
    t.note = "FP8 products on a GPU without FP8 peak figures: no roofline";
    return t;
  }
  double ideal = bf16 / (peaks->bf16_tflops * 1e12) + int8 / (peaks->int8_tops * 1e12) +
                 (fp8 > 0 ? fp8 / (peaks->fp8_tflops * 1e12) : 0.0);
  double bytes = 2.0 * number(config, "memory_plan", "activations_gib") * kGiB;
  if (s.run.level == "model") {
    bytes += kAdamBytesPerParameter * number(config, "model", "parameters");
  }
  ideal += bytes / (peaks->memory_tb_s * 1e12);
  if (ideal > 0) t.roofline_pct = 100.0 * ideal / seconds;
  return t;
}

}  // namespace lpbench::reports
