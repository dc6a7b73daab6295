#include "reports/sweep_report.h"

#include <fmt/format.h>

#include <cmath>

namespace lpbench::reports {

namespace {

constexpr std::string_view kEmulatedMark = "†";

std::string or_dash(const std::optional<double>& value, std::string_view format) {
  if (!value) return "—";
  return fmt::format(fmt::runtime(format), *value);
}

bool int8_emulated(const store::RunRecord& run) {
  return run.int8_backend && *run.int8_backend == "cpu-exact";
}

std::string device_cell(const store::RunRecord& run) {
  std::string cell = run.provenance.gpu_name.value_or(run.device);
  if (int8_emulated(run)) cell += std::string(" ") + std::string(kEmulatedMark);
  return cell;
}

std::string status_cell(const RunSummary& s) {
  std::string cell(store::to_string(s.run.status));
  return cell;
}

std::string step_ms_cell(const timing::Summary& summary) {
  if (summary.count == 0) return "—";
  return fmt::format("{:.2f} ({:.2f}–{:.2f})", summary.median, summary.p10, summary.p90);
}

std::string speedup_cell(const RunSummary& s) {
  if (!s.speedup) return "—";
  if (s.run.recipe == "bf16") return "1.00× (baseline)";
  return fmt::format("{:.2f}× {}", *s.speedup, to_string(*s.verdict));
}

std::string loss_cell(const std::optional<double>& loss) {
  if (!loss) return "—";
  if (!std::isfinite(*loss)) return "non-finite";
  return fmt::format("{:.4f}", *loss);
}

std::string loss_gap_cell(const RunSummary& s) {
  if (s.run.recipe == "bf16" || !s.loss_gap_pct) return "—";
  if (!std::isfinite(*s.loss_gap_pct)) return "non-finite";
  return fmt::format("{:+.2f} %", *s.loss_gap_pct);
}

}  // namespace

SweepReport build_sweep_report(const store::Store& store, const store::SweepRecord& sweep) {
  SweepReport report{sweep, {}};
  for (const store::RunRecord& run : store.runs(sweep.id)) {
    report.runs.push_back(summarize_run(run, store.steps(run.id)));
  }
  compare_with_bf16(report.runs);
  return report;
}

SweepTable sweep_table(const SweepReport& report) {
  using Align = TextTable::Align;
  SweepTable out{TextTable({{"run"},
                            {"workload"},
                            {"recipe"},
                            {"device"},
                            {"status"},
                            {"steps", Align::right},
                            {"step_ms median (p10–p90)", Align::right},
                            {"tokens/s", Align::right},
                            {"peak_mem_gib", Align::right},
                            {"speedup vs bf16", Align::right},
                            {"final loss", Align::right},
                            {"loss gap vs bf16", Align::right}}),
                 {}};
  bool any_emulated = false;
  bool any_cpu = false;
  std::vector<std::string> errors;
  for (const RunSummary& s : report.runs) {
    any_emulated = any_emulated || int8_emulated(s.run);
    any_cpu = any_cpu || s.run.device == "cpu";
    out.table.add_row({std::to_string(s.run.id), s.run.workload, s.run.recipe, device_cell(s.run),
                       status_cell(s), std::to_string(s.steps_recorded), step_ms_cell(s.step_ms),
                       or_dash(s.tokens_per_s, "{:.0f}"), or_dash(s.peak_mem_gib, "{:.3f}"),
                       speedup_cell(s), loss_cell(s.final_loss), loss_gap_cell(s)});
    if (s.run.error)
      errors.push_back(fmt::format("run {} ({}): {}", s.run.id, s.run.recipe, *s.run.error));
  }
  out.notes.push_back(
      "step_ms: median over the measured steps, warm-up left out; speedup: bf16's median over "
      "the recipe's, same sweep; \"same\" when the two p10–p90 ranges overlap.");
  out.notes.push_back(fmt::format(
      "final loss: mean over the last {:.0f} % of steps; loss gap: (recipe − bf16) / bf16.",
      100 * kFinalLossShare));
  if (any_cpu) {
    out.notes.push_back(
        "CPU runs are timed with the host clock and say nothing about GPU speed; peak "
        "memory is reported for GPUs only.");
  }
  if (any_emulated) {
    out.notes.push_back(fmt::format(
        "{} INT8 products computed exactly on the CPU: the GPU path's numerics, emulated; the "
        "time is not a hardware figure.",
        kEmulatedMark));
  }
  for (const std::string& error : errors)
    out.notes.push_back(error);
  return out;
}

std::string sweep_heading(const store::SweepRecord& sweep) {
  return fmt::format("Sweep {}{} · {} · {}", sweep.id,
                     sweep.label ? fmt::format(" ({})", *sweep.label) : "", sweep.started_at,
                     sweep.host);
}

std::string render_sweep_markdown(const SweepReport& report) {
  std::string out =
      fmt::format("## {}\n\n`{}`\n\n", sweep_heading(report.sweep), report.sweep.command_line);
  if (report.runs.empty()) return out + "No runs were recorded in this sweep.\n";
  const SweepTable table = sweep_table(report);
  out += table.table.markdown();
  out += "\n";
  for (const std::string& note : table.notes)
    out += "- " + note + "\n";
  return out;
}

}  // namespace lpbench::reports
