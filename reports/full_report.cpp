#include "reports/full_report.h"

#include <fmt/format.h>

#include <optional>

#include "base/env/build_info.h"
#include "base/env/time_stamp.h"
#include "reports/diagnostics_report.h"
#include "reports/frontier.h"
#include "reports/hotspots.h"
#include "reports/kernel_table.h"
#include "reports/report_charts.h"
#include "reports/sweep_report.h"
#include "reports/text_table.h"

namespace lpbench::reports {

namespace {

// What `--diagnostics` recorded, where a run of the sweep did.
void add_diagnostics(Document& doc, const store::Store& store, const SweepReport& report) {
  const std::vector<RunDiagnostics> runs = load_diagnostics(store, report);
  if (runs.empty()) return;
  for (DiagnosticsSection& s : diagnostics_sections(runs)) {
    doc.heading(3, "Quantization diagnostics: " + s.workload);
    doc.paragraph("By sampled step:");
    doc.table(std::move(s.per_step));
    doc.paragraph("Worst operands (lowest SQNR, most flushed) at the last sampled step:");
    doc.table(std::move(s.worst));
    doc.list(std::move(s.notes));
  }
  for (Figure& f : diagnostics_figures(report, runs))
    doc.figure(std::move(f));
}

// Where each recipe's step time went, where runs of the sweep recorded --regions.
void add_hotspots(Document& doc, const store::Store& store, const SweepReport& report) {
  std::vector<HotspotTable> tables = hotspot_tables(store, report);
  if (tables.empty()) return;
  for (HotspotTable& h : tables) {
    doc.heading(3, "Hotspots: " + h.workload);
    doc.table(std::move(h.table));
  }
  doc.paragraph(kHotspotReading);
}

// The kernel suite's rows (lpbench-kernels / lpbench gemm) of the sweep; false where it has none.
bool add_kernels(Document& doc, const store::Store& store, int64_t sweep_id) {
  std::optional<KernelTables> t = kernel_tables(store.kernel_results(sweep_id));
  if (!t) return false;
  if (t->gemms.rows() > 0) {
    doc.heading(3, "Kernel benchmarks: GEMMs");
    doc.table(std::move(t->gemms));
  }
  if (t->quantize.rows() > 0) {
    doc.heading(3, "Kernel benchmarks: quantize");
    doc.table(std::move(t->quantize));
  }
  doc.paragraph(std::move(t->reading));
  if (!t->notes.empty()) doc.list(std::move(t->notes));
  return true;
}

void add_sweep(Document& doc, const store::Store& store, const store::SweepRecord& sweep) {
  const SweepReport report = build_sweep_report(store, sweep);
  doc.heading(2, sweep_heading(sweep));
  doc.code(sweep.command_line);
  if (report.runs.empty()) {
    // A kernel-suite sweep has kernel rows and no runs.
    if (!add_kernels(doc, store, sweep.id)) doc.paragraph("No runs were recorded in this sweep.");
    return;
  }
  SweepTable table = sweep_table(report);
  doc.table(std::move(table.table));
  doc.list(std::move(table.notes));
  if (std::optional<TextTable> ranks = data_parallel_table(report)) {
    doc.heading(3, "Data parallel");
    doc.paragraph(
        "tokens/s counts every rank's tokens; each rank's median step and peak are its own, "
        "gathered by rank 0; communication is the collectives' regions (all-gather, "
        "reduce-scatter, all-reduce) per step, as the hotspot table lists them; scaling "
        "efficiency: tokens/s over N × tokens/s of the newest one-process run in the database "
        "alike (workload, recipe, depth, one rank's tokens per step, device).");
    doc.table(std::move(*ranks));
  }

  const std::vector<RunCurves> curves = load_curves(store, report);
  if (auto f = loss_figure(report, curves)) doc.figure(std::move(*f));
  if (auto f = loss_gap_figure(report, curves)) doc.figure(std::move(*f));
  if (auto f = speedup_figure(report)) {
    doc.figure(std::move(*f));
  } else {
    doc.paragraph("Speedup: no recipe has a bf16 run beside it with measured steps.");
  }
  if (auto f = memory_figure(report, curves)) {
    doc.figure(std::move(*f));
  } else {
    doc.paragraph("Peak memory: not recorded in this sweep (CPU runs record none).");
  }
  add_hotspots(doc, store, report);
  add_diagnostics(doc, store, report);
  add_kernels(doc, store, sweep.id);
}

std::string commit_cell(const store::RunRecord& run) {
  std::string commit = run.provenance.git_commit.substr(0, 12);
  return run.provenance.git_dirty ? commit + "+dirty" : commit;
}

void add_nightly(Document& doc, const std::vector<NightlySweep>& nightly) {
  doc.heading(2, "Nightly history");
  doc.paragraph(fmt::format(
      "{} sweeps labelled `nightly`, from {} to {}. `lpbench compare --baseline nightly:N "
      "--candidate …` gives the verdict on the newest against the nights before.",
      nightly.size(), nightly.front().sweep.started_at, nightly.back().sweep.started_at));
  for (Figure& f : nightly_figures(nightly))
    doc.figure(std::move(f));
  using Align = TextTable::Align;
  TextTable table({{"sweep"},
                   {"started (UTC)"},
                   {"host"},
                   {"commit"},
                   {"workload"},
                   {"recipe"},
                   {"status"},
                   {"step_ms median (p10–p90)", Align::right},
                   {"tokens/s", Align::right},
                   {"final loss", Align::right}});
  for (const NightlySweep& n : nightly) {
    for (const RunSummary& s : n.runs) {
      table.add_row({std::to_string(n.sweep.id), n.sweep.started_at, n.sweep.host,
                     commit_cell(s.run), s.run.workload, s.run.recipe,
                     std::string(store::to_string(s.run.status)),
                     s.step_ms.count ? fmt::format("{:.2f} ({:.2f}–{:.2f})", s.step_ms.median,
                                                   s.step_ms.p10, s.step_ms.p90)
                                     : "—",
                     s.tokens_per_s ? fmt::format("{:.0f}", *s.tokens_per_s) : "—",
                     s.final_loss ? fmt::format("{:.4f}", *s.final_loss) : "—"});
    }
  }
  doc.table(std::move(table));
}

}  // namespace

// Speed against accuracy for one set of convergence runs: the table, the source of the speedups,
// the fastest recipe at parity, and the scatter chart with each point named.
namespace {

void add_frontier(Document& doc, TitledFrontier& t, size_t index) {
  doc.heading(2, "Speed against accuracy: " + t.title);
  doc.paragraph(frontier_source(t.frontier));
  doc.table(frontier_table(t.frontier));
  doc.paragraph(frontier_finding(t.frontier));
  Chart chart = frontier_chart(t.frontier);
  if (!has_data(chart)) return;
  doc.figure({fmt::format("frontier-{}.svg", index + 1),
              "Each recipe's layer speedup over BF16 against its loss gap to BF16 (bars: the "
              "lowest and highest seed)",
              std::move(chart),
              {}});
}

}  // namespace

Document build_report(const store::Store& store, const std::vector<store::SweepRecord>& sweeps,
                      const std::string& db_path) {
  Document doc("lpbench report");
  doc.paragraph(fmt::format("From `{}`, written {} by lpbench {}.", db_path, env::utc_now_iso8601(),
                            env::build_info().version));
  if (sweeps.empty()) doc.paragraph("No sweeps are recorded in this database yet.");
  for (const store::SweepRecord& sweep : sweeps)
    add_sweep(doc, store, sweep);
  std::vector<TitledFrontier> frontiers = report_frontiers(store, sweeps);
  for (size_t i = 0; i < frontiers.size(); ++i)
    add_frontier(doc, frontiers[i], i);
  const std::vector<NightlySweep> nightly = load_nightly(store);
  if (!nightly.empty()) add_nightly(doc, nightly);
  return doc;
}

void draw_figures(Document& document, const std::string& gnuplot) {
  for (Figure* f : document.figures())
    f->svg = render_svg(gnuplot, f->chart);
}

}  // namespace lpbench::reports
