#include <fmt/format.h>

#include <memory>

#include "base/errors.h"
#include "base/store/store.h"
#include "harness/cli/commands.h"
#include "harness/cli/output_paths.h"
#include "reports/csv_export.h"
#include "reports/gbench_json.h"

namespace lpbench::cli {

namespace {

struct ExportOptions {
  std::string db = "lpbench.db";
  std::string format = "csv";
  std::string out;
};

int execute(const ExportOptions& options) {
  if (options.format != "csv" && options.format != "gbench-json") {
    throw InputError(fmt::format(
        "--format {}: unknown; use csv (every table) or gbench-json (the kernel suite's results "
        "in Google Benchmark's JSON format)",
        options.format));
  }
  check_output_directory("--out", options.out);
  const store::Store store = store::Store::open(options.db, store::Store::Mode::read);
  make_output_directory(options.out);
  const std::string dir = options.out + "/";
  if (options.format == "gbench-json") {
    if (store.kernel_results(std::nullopt).empty()) {
      throw InputError(
          fmt::format("{} holds no kernel results; record some with `lpbench gemm "
                      "--db {}` first, or use --format csv",
                      options.db, options.db));
    }
    write_text_file(dir + "kernels.json", reports::kernels_gbench_json(store, std::nullopt));
    fmt::print("Wrote kernels.json (Google Benchmark's format) to {}\n", options.out);
    return 0;
  }
  write_text_file(dir + "sweeps.csv", reports::sweeps_csv(store));
  write_text_file(dir + "runs.csv", reports::runs_csv(store));
  write_text_file(dir + "steps.csv", reports::steps_csv(store));
  write_text_file(dir + "evals.csv", reports::evals_csv(store));
  write_text_file(dir + "kernels.csv", reports::kernels_csv(store));
  fmt::print("Wrote sweeps.csv, runs.csv, steps.csv, evals.csv and kernels.csv to {}\n",
             options.out);
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* exp = app.add_subcommand(
      "export",
      "Write the database's sweeps, runs, steps, validation losses and kernel results as CSV "
      "files, or the kernel results as Google Benchmark JSON");
  exp->add_option("--db", options->db, "SQLite database to read")->capture_default_str();
  exp->add_option("--format", options->format, "csv or gbench-json")->capture_default_str();
  exp->add_option("--out", options->out, "Folder to write the files into (created if missing)")
      ->required();
  exp->callback([&action, options] { action = [options] { return execute(*options); }; });
}

}  // namespace lpbench::cli
