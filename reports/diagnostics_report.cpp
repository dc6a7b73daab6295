#include "reports/diagnostics_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace lpbench::reports {

namespace {

constexpr const char* kPrefix = "diag.";
// Operand kinds in the order the tables show them.
const std::vector<std::string>& operand_kinds() {
  static const std::vector<std::string> kinds{"x", "w", "dy"};
  return kinds;
}
// Rows of the per-step table per run: the first and the last sampled step and evenly between.
constexpr size_t kStepsShown = 8;
// Worst operands per recipe: by lowest SQNR, then by highest flushed share.
constexpr size_t kWorstBySqnr = 5;
constexpr size_t kWorstByFlush = 3;

std::string operand_of(const std::string& key) {
  return key.substr(key.rfind('.') + 1);
}

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double d) { return std::isnan(d); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mean(const std::vector<double>& v) {
  double sum = 0.0;
  size_t n = 0;
  for (double d : v) {
    if (std::isnan(d)) continue;
    sum += d;
    ++n;
  }
  return n ? sum / static_cast<double>(n) : NAN;
}

std::string db(double v) {
  if (std::isnan(v)) return "—";
  if (std::isinf(v)) return v > 0 ? "exact" : "-inf";
  return fmt::format("{:.1f}", v);
}

std::string pct(double share) {
  if (std::isnan(share)) return "—";
  return fmt::format("{:.2f} %", 100.0 * share);
}

std::string number(double v) {
  return std::isnan(v) ? "—" : fmt::format("{:.3g}", v);
}

// The steps a run's per-step table shows: all when few, else the first, the last and evenly
// spaced ones between.
std::vector<int64_t> shown_steps(const RunDiagnostics& run) {
  std::vector<int64_t> all;
  for (const auto& [step, operands] : run.steps)
    all.push_back(step);
  if (all.size() <= kStepsShown) return all;
  std::vector<int64_t> shown;
  for (size_t i = 0; i < kStepsShown; ++i) {
    const size_t at = i * (all.size() - 1) / (kStepsShown - 1);
    if (shown.empty() || shown.back() != all[at]) shown.push_back(all[at]);
  }
  return shown;
}

// Per operand kind, one statistic over the operands of a step.
template <typename Stat>
std::string by_kind(const std::map<std::string, OperandFigures>& operands,
                    double OperandFigures::*figure, Stat stat, std::string (*format)(double)) {
  std::string cell;
  for (const std::string& kind : operand_kinds()) {
    std::vector<double> values;
    for (const auto& [key, f] : operands) {
      if (operand_of(key) == kind) values.push_back(f.*figure);
    }
    cell += (cell.empty() ? "" : " / ") + format(stat(values));
  }
  return cell;
}

// The operand with the extreme figure (the lowest, or the highest with `highest`).
std::pair<std::string, double> extreme(const std::map<std::string, OperandFigures>& operands,
                                       double OperandFigures::*figure, bool highest) {
  std::pair<std::string, double> best{"", NAN};
  for (const auto& [key, f] : operands) {
    const double v = f.*figure;
    if (std::isnan(v)) continue;
    if (std::isnan(best.second) || (highest ? v > best.second : v < best.second)) best = {key, v};
  }
  return best;
}

TextTable per_step_table() {
  using Align = TextTable::Align;
  return TextTable({{"recipe"},
                    {"step", Align::right},
                    {"operands", Align::right},
                    {"SQNR dB x / w / dy (median)", Align::right},
                    {"lowest SQNR dB", Align::right},
                    {"flushed x / w / dy (mean)", Align::right},
                    {"most flushed", Align::right},
                    {"clipped (max)", Align::right}});
}

TextTable worst_table() {
  using Align = TextTable::Align;
  return TextTable({{"recipe"},
                    {"operand (module.gemm.operand)"},
                    {"SQNR dB first → last", Align::right},
                    {"flushed first → last", Align::right},
                    {"clipped last", Align::right},
                    {"amax last", Align::right},
                    {"scale last", Align::right},
                    {"fell back last", Align::right}});
}

void add_per_step_rows(TextTable& table, const RunDiagnostics& run) {
  for (int64_t step : shown_steps(run)) {
    const auto& operands = run.steps.at(step);
    const auto low = extreme(operands, &OperandFigures::sqnr_db, false);
    const auto flushed = extreme(operands, &OperandFigures::flush_share, true);
    const auto clipped = extreme(operands, &OperandFigures::clip_share, true);
    table.add_row(
        {run.summary->run.recipe, std::to_string(step), std::to_string(operands.size()),
         by_kind(operands, &OperandFigures::sqnr_db, median, db),
         low.first.empty() ? "—" : fmt::format("{} `{}`", db(low.second), low.first),
         by_kind(operands, &OperandFigures::flush_share, mean, pct),
         flushed.first.empty() ? "—" : fmt::format("{} `{}`", pct(flushed.second), flushed.first),
         pct(clipped.second)});
  }
}

void add_worst_rows(TextTable& table, const RunDiagnostics& run) {
  const auto& first = run.steps.begin()->second;
  const auto& last = run.steps.rbegin()->second;
  std::vector<std::string> keys;
  for (const auto& [key, f] : last)
    keys.push_back(key);
  auto pick = [&](double OperandFigures::*figure, bool highest, size_t count) {
    std::vector<std::string> sorted = keys;
    std::stable_sort(sorted.begin(), sorted.end(), [&](const std::string& a, const std::string& b) {
      const double va = last.at(a).*figure;
      const double vb = last.at(b).*figure;
      if (std::isnan(va) != std::isnan(vb)) return std::isnan(vb);  // NaN last
      return highest ? va > vb : va < vb;
    });
    sorted.resize(std::min(count, sorted.size()));
    return sorted;
  };
  std::vector<std::string> worst = pick(&OperandFigures::sqnr_db, false, kWorstBySqnr);
  for (const std::string& key : pick(&OperandFigures::flush_share, true, kWorstByFlush)) {
    if (std::find(worst.begin(), worst.end(), key) == worst.end()) worst.push_back(key);
  }
  for (const std::string& key : worst) {
    const OperandFigures& l = last.at(key);
    const auto f = first.find(key);
    const bool has_first = f != first.end() && run.steps.size() > 1;
    table.add_row(
        {run.summary->run.recipe, "`" + key + "`",
         has_first ? fmt::format("{} → {}", db(f->second.sqnr_db), db(l.sqnr_db)) : db(l.sqnr_db),
         has_first ? fmt::format("{} → {}", pct(f->second.flush_share), pct(l.flush_share))
                   : pct(l.flush_share),
         pct(l.clip_share), number(l.amax), number(l.scale),
         l.fallback_share ? pct(*l.fallback_share) : "—"});
  }
}

std::vector<std::string> section_notes(const std::vector<const RunDiagnostics*>& runs) {
  std::string steps;
  for (const RunDiagnostics* r : runs) {
    steps += fmt::format("{}{}: {} sampled steps ({}–{})", steps.empty() ? "" : "; ",
                         r->summary->run.recipe, r->steps.size(), r->steps.begin()->first,
                         r->steps.rbegin()->first);
  }
  return {
      "Each quantized GEMM operand (x, w, dy of fprop, dgrad and wgrad) of every quantized "
      "module, computed from the quantized tensors the GEMMs use, at the sampled steps of "
      "`--diagnostics` (step 0 is before any update). " +
          steps + ".",
      "SQNR = 10·log10(Σx² / Σ(x − dq(q(x)))²); flushed = the share of nonzero values that "
      "dequantize to 0 (small values lost under a scale set by a large one); clipped = the share "
      "beyond the format's range at its block's scale, 0 by construction under dynamic amax "
      "scaling (a check).",
      "int8-fallback: SQNR and flushed share of what its GEMMs compute with (outlier blocks "
      "with their quantized residual); fell back = the share of the left operand's blocks that "
      "did.",
      "Modules kept in BF16 (embedding, output layer, MoE router, BF16 GEMMs of an ablation) "
      "have no quantized operand and so no row."};
}

}  // namespace

std::optional<std::pair<OperandName, std::string>> parse_diagnostic_name(const std::string& name) {
  const std::string prefix = kPrefix;
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::string rest = name.substr(prefix.size());
  std::string parts[3];  // figure, operand, gemm
  for (std::string& part : parts) {
    const size_t dot = rest.rfind('.');
    if (dot == std::string::npos || dot == 0) return std::nullopt;
    part = rest.substr(dot + 1);
    rest.resize(dot);
  }
  if (rest.empty()) return std::nullopt;
  return std::make_pair(OperandName{rest, parts[2], parts[1]}, parts[0]);
}

std::vector<RunDiagnostics> load_diagnostics(const store::Store& store, const SweepReport& report) {
  std::vector<RunDiagnostics> runs;
  for (const RunSummary& summary : report.runs) {
    RunDiagnostics run{&summary, {}};
    for (const store::MetricRecord& m : store.metrics(summary.run.id, kPrefix)) {
      const auto parsed = parse_diagnostic_name(m.name);
      if (!parsed) continue;
      const auto& [operand, figure] = *parsed;
      OperandFigures& f =
          run.steps[m.step][fmt::format("{}.{}.{}", operand.module, operand.gemm, operand.operand)];
      if (figure == "amax") f.amax = m.value;
      if (figure == "scale") f.scale = m.value;
      if (figure == "sqnr_db") f.sqnr_db = m.value;
      if (figure == "clip_share") f.clip_share = m.value;
      if (figure == "flush_share") f.flush_share = m.value;
      if (figure == "fallback_share") f.fallback_share = m.value;
    }
    if (!run.steps.empty()) runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<DiagnosticsSection> diagnostics_sections(const std::vector<RunDiagnostics>& runs) {
  std::vector<std::string> workloads;
  for (const RunDiagnostics& r : runs) {
    if (std::find(workloads.begin(), workloads.end(), r.summary->run.workload) == workloads.end())
      workloads.push_back(r.summary->run.workload);
  }
  std::vector<DiagnosticsSection> sections;
  for (const std::string& workload : workloads) {
    DiagnosticsSection section{workload, per_step_table(), worst_table(), {}};
    std::vector<const RunDiagnostics*> of_workload;
    for (const RunDiagnostics& r : runs) {
      if (r.summary->run.workload != workload) continue;
      of_workload.push_back(&r);
      add_per_step_rows(section.per_step, r);
      add_worst_rows(section.worst, r);
    }
    section.notes = section_notes(of_workload);
    sections.push_back(std::move(section));
  }
  return sections;
}

std::string render_diagnostics(const store::Store& store, const SweepReport& report) {
  std::string out;
  for (const DiagnosticsSection& s : diagnostics_sections(load_diagnostics(store, report))) {
    out += fmt::format(
        "\n### Quantization diagnostics: {}\n\nBy sampled step:\n\n{}\nWorst operands (lowest "
        "SQNR, most flushed) at the last sampled step:\n\n{}\n",
        s.workload, s.per_step.markdown(), s.worst.markdown());
    for (const std::string& note : s.notes)
      out += "- " + note + "\n";
  }
  return out;
}

std::vector<Figure> diagnostics_figures(const SweepReport& report,
                                        const std::vector<RunDiagnostics>& runs) {
  const bool several_workloads =
      std::any_of(runs.begin(), runs.end(), [&](const RunDiagnostics& r) {
        return r.summary->run.workload != runs.front().summary->run.workload;
      });
  auto figure = [&](const std::string& what, double OperandFigures::*field, bool as_median,
                    double factor, const std::string& y_label) {
    Figure f;
    f.file = fmt::format("sweep-{}-diagnostics-{}.svg", report.sweep.id, what);
    f.chart.x_label = "step";
    f.chart.y_label = y_label;
    for (const RunDiagnostics& r : runs) {
      for (const std::string& kind : operand_kinds()) {
        ChartSeries series;
        series.title = fmt::format("{}{} {}", r.summary->run.recipe,
                                   several_workloads ? " " + r.summary->run.workload : "", kind);
        series.style = ChartSeries::Style::error_lines;
        for (const auto& [step, operands] : r.steps) {
          std::vector<double> values;
          for (const auto& [key, fig] : operands) {
            if (operand_of(key) == kind && std::isfinite(fig.*field))
              values.push_back(fig.*field * factor);
          }
          if (values.empty()) continue;
          const double center = as_median ? median(values) : mean(values);
          const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
          series.points.push_back({static_cast<double>(step), center, *lo, *hi, {}});
        }
        if (!series.points.empty()) f.chart.series.push_back(std::move(series));
      }
    }
    return f;
  };
  std::vector<Figure> figures;
  Figure sqnr = figure("sqnr", &OperandFigures::sqnr_db, true, 1.0, "SQNR (dB)");
  sqnr.chart.title = fmt::format("Quantization SQNR per operand kind, sweep {}", report.sweep.id);
  sqnr.caption =
      "Median SQNR over the quantized operands of each kind (x, w, dy) per sampled step, with "
      "bars from the lowest to the highest operand.";
  Figure flush = figure("flushed", &OperandFigures::flush_share, false, 100.0, "flushed (%)");
  flush.chart.title =
      fmt::format("Nonzero values flushed to zero per operand kind, sweep {}", report.sweep.id);
  flush.caption =
      "Mean share of nonzero values that dequantize to 0 over the quantized operands of each "
      "kind per sampled step, with bars from the lowest to the highest operand.";
  for (Figure* f : {&sqnr, &flush}) {
    if (has_data(f->chart)) figures.push_back(std::move(*f));
  }
  return figures;
}

}  // namespace lpbench::reports
