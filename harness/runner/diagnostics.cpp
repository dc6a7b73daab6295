#include "harness/runner/diagnostics.h"

namespace lpbench::runner {

bool diagnostic_step(int64_t step, int64_t every, int64_t total) {
  return every > 0 && (step % every == 0 || step + 1 == total);
}

std::vector<store::MetricRecord> diagnostic_metrics(
    int64_t run_id, int64_t step, const std::map<std::string, kernels::OperandStats>& stats) {
  std::vector<store::MetricRecord> metrics;
  for (const auto& [key, s] : stats) {
    const std::string prefix = "diag." + key + ".";
    metrics.push_back({run_id, step, prefix + "amax", s.amax});
    metrics.push_back({run_id, step, prefix + "scale", s.scale});
    metrics.push_back({run_id, step, prefix + "sqnr_db", s.sqnr_db});
    metrics.push_back({run_id, step, prefix + "clip_share", s.clipped});
    metrics.push_back({run_id, step, prefix + "flush_share", s.flushed});
    if (s.fallback) metrics.push_back({run_id, step, prefix + "fallback_share", *s.fallback});
  }
  return metrics;
}

DiagnosticScope::DiagnosticScope(bool on) : on_(on) {
  if (!on_) return;
  kernels::take_operand_stats();  // nothing left over from a step that failed
  kernels::set_operand_diagnostics(true);
}

DiagnosticScope::~DiagnosticScope() {
  if (on_) kernels::set_operand_diagnostics(false);
}

}  // namespace lpbench::runner
