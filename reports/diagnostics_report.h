#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/store/store.h"
#include "reports/document.h"
#include "reports/sweep_report.h"
#include "reports/text_table.h"

// "Quantization diagnostics": what `--diagnostics` recorded (step_metrics named
// diag.<module>.<gemm>.<operand>.<figure>), per workload of a sweep: each recipe's operands by
// kind over the sampled steps, and its worst operands (lowest SQNR, highest flushed share) from
// the first sampled step to the last.
namespace lpbench::reports {

// One quantized operand's figures at one sampled step (NaN where not recorded).
struct OperandFigures {
  double amax = NAN;
  double scale = NAN;
  double sqnr_db = NAN;
  double clip_share = NAN;
  double flush_share = NAN;
  std::optional<double> fallback_share;
};

// "<module>.<gemm>.<operand>" split from the right (module names hold dots).
struct OperandName {
  std::string module;
  std::string gemm;
  std::string operand;  // x, w or dy
};
// Parses "diag.<module>.<gemm>.<operand>.<figure>"; nothing for any other name.
std::optional<std::pair<OperandName, std::string>> parse_diagnostic_name(const std::string& name);

struct RunDiagnostics {
  const RunSummary* summary = nullptr;
  // step → "<module>.<gemm>.<operand>" → figures
  std::map<int64_t, std::map<std::string, OperandFigures>> steps;
};
// The runs of the sweep that recorded diagnostics, in the report's order.
std::vector<RunDiagnostics> load_diagnostics(const store::Store& store, const SweepReport& report);

struct DiagnosticsSection {
  std::string workload;
  TextTable per_step;  // recipe × sampled step: SQNR and flushed share by operand kind
  TextTable worst;     // per recipe, its worst operands, first sampled step → last
  std::vector<std::string> notes;
};
std::vector<DiagnosticsSection> diagnostics_sections(const std::vector<RunDiagnostics>& runs);

// The sections as Markdown for `lpbench report`; empty when no run recorded diagnostics.
std::string render_diagnostics(const store::Store& store, const SweepReport& report);

// Median SQNR and mean flushed share per recipe and operand kind over the sampled steps.
std::vector<Figure> diagnostics_figures(const SweepReport& report,
                                        const std::vector<RunDiagnostics>& runs);

}  // namespace lpbench::reports
