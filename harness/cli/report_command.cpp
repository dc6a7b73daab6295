#include <fmt/format.h>

#include <memory>

#include "harness/cli/commands.h"
#include "harness/errors.h"
#include "harness/store/store.h"
#include "reports/hotspots.h"
#include "reports/sweep_report.h"

namespace lpbench::cli {

namespace {

struct ReportOptions {
  std::string db = "lpbench.db";
  int64_t sweep = 0;  // 0: every sweep
  bool last = false;
};

int execute(const ReportOptions& options) {
  const store::Store store = store::Store::open(options.db, store::Store::Mode::read);
  std::vector<store::SweepRecord> sweeps;
  if (options.sweep > 0) {
    std::optional<store::SweepRecord> sweep = store.sweep(options.sweep);
    if (!sweep) {
      throw InputError(fmt::format("no sweep {} in '{}'; `lpbench list runs --db {}` lists them",
                                   options.sweep, options.db, options.db));
    }
    sweeps.push_back(*sweep);
  } else {
    sweeps = store.sweeps();
    if (options.last && !sweeps.empty()) sweeps.erase(sweeps.begin(), sweeps.end() - 1);
  }
  if (sweeps.empty()) {
    fmt::print("No sweeps recorded in {} yet.\n", options.db);
    return 0;
  }
  for (size_t i = 0; i < sweeps.size(); ++i) {
    const reports::SweepReport report = reports::build_sweep_report(store, sweeps[i]);
    fmt::print("{}{}{}", i ? "\n" : "", reports::render_sweep_markdown(report),
               reports::render_hotspots(store, report));
  }
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* report = app.add_subcommand("report", "Print the table of each sweep in the database");
  report->add_option("--db", options->db, "SQLite database to read")->capture_default_str();
  auto* sweep =
      report->add_option("--sweep", options->sweep, "Only this sweep")->check(CLI::PositiveNumber);
  report->add_flag("--last", options->last, "Only the newest sweep")->excludes(sweep);
  report->callback([&action, options] { action = [options] { return execute(*options); }; });
}

}  // namespace lpbench::cli
