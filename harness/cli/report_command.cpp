#include <fmt/format.h>

#include <memory>

#include "base/errors.h"
#include "base/store/store.h"
#include "harness/cli/commands.h"
#include "harness/cli/output_paths.h"
#include "reports/chart.h"
#include "reports/diagnostics_report.h"
#include "reports/frontier.h"
#include "reports/full_report.h"
#include "reports/hotspots.h"
#include "reports/kernel_table.h"
#include "reports/selection.h"
#include "reports/sweep_report.h"

namespace lpbench::cli {

namespace {

struct ReportOptions {
  std::string db = "lpbench.db";
  int64_t sweep = 0;  // 0: every sweep
  bool last = false;
  std::string since;  // empty: no lower bound on the start time
  std::string out;    // empty: the tables on stdout
};

std::vector<store::SweepRecord> chosen_sweeps(const store::Store& store,
                                              const ReportOptions& options) {
  if (options.sweep > 0) {
    std::optional<store::SweepRecord> sweep = store.sweep(options.sweep);
    if (!sweep) {
      throw InputError(fmt::format("no sweep {} in '{}'; `lpbench list runs --db {}` lists them",
                                   options.sweep, options.db, options.db));
    }
    return {*sweep};
  }
  store::SweepQuery query;
  if (!options.since.empty()) {
    query.started_from = reports::parse_since(options.since, "--since");
  }
  std::vector<store::SweepRecord> sweeps = store.sweeps(query);
  if (options.last && !sweeps.empty()) sweeps.erase(sweeps.begin(), sweeps.end() - 1);
  return sweeps;
}

int print_tables(const store::Store& store, const ReportOptions& options) {
  const std::vector<store::SweepRecord> sweeps = chosen_sweeps(store, options);
  if (sweeps.empty()) {
    fmt::print("No sweeps recorded in {} yet.\n", options.db);
    return 0;
  }
  for (size_t i = 0; i < sweeps.size(); ++i) {
    const reports::SweepReport report = reports::build_sweep_report(store, sweeps[i]);
    const std::string kernels = reports::render_kernel_table(store, sweeps[i].id);
    if (report.runs.empty() && !kernels.empty()) {
      // A kernel-suite sweep: its kernel table, no runs table to say is empty.
      fmt::print("{}## {}\n\n`{}`\n{}", i ? "\n" : "", reports::sweep_heading(sweeps[i]),
                 sweeps[i].command_line, kernels);
      continue;
    }
    fmt::print("{}{}{}{}{}", i ? "\n" : "", reports::render_sweep_markdown(report),
               reports::render_hotspots(store, report), reports::render_diagnostics(store, report),
               kernels);
  }
  for (const reports::TitledFrontier& t : reports::report_frontiers(store, sweeps)) {
    fmt::print("\n{}",
               reports::render_frontier(t.frontier, "## Speed against accuracy: " + t.title));
  }
  return 0;
}

int write_report(const ReportOptions& options) {
  if (!options.since.empty()) reports::parse_since(options.since, "--since");
  const std::optional<std::string> gnuplot = reports::find_gnuplot();
  if (!gnuplot) {
    throw InputError(
        "--out needs gnuplot to draw the charts and none is on PATH; install Debian's "
        "gnuplot-nox (scripts/setup does), or leave out --out for the tables alone");
  }
  check_output_directory("--out", options.out);
  const store::Store store = store::Store::open(options.db, store::Store::Mode::read);
  reports::Document document =
      reports::build_report(store, chosen_sweeps(store, options), options.db);
  reports::draw_figures(document, *gnuplot);

  make_output_directory(options.out);
  const std::string dir = options.out + "/";
  const std::vector<reports::Figure*> figures = document.figures();
  for (const reports::Figure* f : figures)
    write_text_file(dir + f->file, f->svg);
  write_text_file(dir + "report.md", document.markdown());
  write_text_file(dir + "report.html", document.html());
  fmt::print("Wrote {0}report.md, {0}report.html and {1} chart{2} (SVG)\n", dir, figures.size(),
             figures.size() == 1 ? "" : "s");
  return 0;
}

int execute(const ReportOptions& options) {
  if (!options.out.empty()) return write_report(options);
  if (!options.since.empty()) reports::parse_since(options.since, "--since");
  const store::Store store = store::Store::open(options.db, store::Store::Mode::read);
  return print_tables(store, options);
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* report = app.add_subcommand(
      "report", "Print the table of each sweep, or write a report with charts (--out)");
  report->add_option("--db", options->db, "SQLite database to read")->capture_default_str();
  auto* sweep =
      report->add_option("--sweep", options->sweep, "Only this sweep")->check(CLI::PositiveNumber);
  auto* last = report->add_flag("--last", options->last, "Only the newest sweep")->excludes(sweep);
  report
      ->add_option("--since", options->since,
                   "Only sweeps started at or after this time (ISO 8601 UTC, e.g. "
                   "2026-11-22T03:00:00Z)")
      ->excludes(sweep)
      ->excludes(last);
  report->add_option("--out", options->out,
                     "Write report.md, report.html and the charts (SVG, drawn by gnuplot) into "
                     "this folder, created if missing");
  report->callback([&action, options] { action = [options] { return execute(*options); }; });
}

}  // namespace lpbench::cli
