#include <fmt/format.h>

#include <memory>

#include "harness/cli/commands.h"
#include "harness/cli/output_paths.h"
#include "harness/errors.h"
#include "harness/store/store.h"
#include "reports/csv_export.h"

namespace lpbench::cli {

namespace {

struct ExportOptions {
  std::string db = "lpbench.db";
  std::string format = "csv";
  std::string out;
};

int execute(const ExportOptions& options) {
  if (options.format != "csv") {
    // Google Benchmark's JSON describes kernel benchmarks; lpbench has no kernel table yet.
    throw InputError(fmt::format(
        "--format {}: only csv is available (the JSON of kernel results in Google Benchmark's "
        "format comes with the kernel table); use --format csv",
        options.format));
  }
  check_output_directory("--out", options.out);
  const store::Store store = store::Store::open(options.db, store::Store::Mode::read);
  make_output_directory(options.out);
  const std::string dir = options.out + "/";
  write_text_file(dir + "sweeps.csv", reports::sweeps_csv(store));
  write_text_file(dir + "runs.csv", reports::runs_csv(store));
  write_text_file(dir + "steps.csv", reports::steps_csv(store));
  write_text_file(dir + "evals.csv", reports::evals_csv(store));
  fmt::print("Wrote sweeps.csv, runs.csv, steps.csv and evals.csv to {}\n", options.out);
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* exp = app.add_subcommand(
      "export", "Write the database's sweeps, runs, steps and validation losses as CSV files");
  exp->add_option("--db", options->db, "SQLite database to read")->capture_default_str();
  exp->add_option("--format", options->format, "csv")->capture_default_str();
  exp->add_option("--out", options->out, "Folder to write the files into (created if missing)")
      ->required();
  exp->callback([&action, options] { action = [options] { return execute(*options); }; });
}

}  // namespace lpbench::cli
