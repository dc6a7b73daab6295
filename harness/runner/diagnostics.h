#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/store/records.h"
#include "kernels/torch/operand_diagnostics.h"

// `--diagnostics=K`: which steps are sampled, and how their figures are named in step_metrics.
namespace lpbench::runner {

// Every K-th step from the first (so the first sample shows the initial weights), and the last.
bool diagnostic_step(int64_t step, int64_t every, int64_t total);

// "diag.<module>.<gemm>.<operand>.<figure>" for each figure of each operand: amax, scale,
// sqnr_db, clip_share, flush_share, and fallback_share for int8-fallback's left operand.
std::vector<store::MetricRecord> diagnostic_metrics(
    int64_t run_id, int64_t step, const std::map<std::string, kernels::OperandStats>& stats);

// Turns the sampling switch on for one step; off again when it goes, whatever the step threw.
class DiagnosticScope {
 public:
  explicit DiagnosticScope(bool on);
  ~DiagnosticScope();
  DiagnosticScope(const DiagnosticScope&) = delete;
  DiagnosticScope& operator=(const DiagnosticScope&) = delete;

 private:
  bool on_;
};

}  // namespace lpbench::runner
