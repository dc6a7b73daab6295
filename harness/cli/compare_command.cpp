#include <fmt/format.h>

#include <memory>

#include "base/store/store.h"
#include "harness/cli/commands.h"
#include "harness/cli/output_paths.h"
#include "reports/compare.h"
#include "reports/compare_render.h"
#include "reports/selection.h"

namespace lpbench::cli {

namespace {

struct CompareOptions {
  std::string db = "lpbench.db";
  std::string baseline;
  std::string candidate;
  std::string junit;     // empty: none
  std::string markdown;  // empty: stdout only
  reports::ComparePolicy policy;
};

int execute(const CompareOptions& options) {
  // Every argument is checked before the database is read or a file written.
  const reports::Selection baseline = reports::parse_selection(options.baseline, "--baseline");
  const reports::Selection candidate = reports::parse_selection(options.candidate, "--candidate");
  if (!options.junit.empty()) check_output_file("--junit", options.junit);
  if (!options.markdown.empty()) check_output_file("--markdown", options.markdown);

  const store::Store store = store::Store::open(options.db, store::Store::Mode::read);
  const reports::SelectedPair runs = reports::select_runs(store, baseline, candidate);
  const reports::Comparison comparison =
      reports::compare_runs(store, runs, baseline.spec, candidate.spec, options.policy);

  const std::string markdown = reports::render_compare_markdown(comparison);
  fmt::print("{}", markdown);
  if (!options.markdown.empty()) write_text_file(options.markdown, markdown);
  if (!options.junit.empty()) {
    write_text_file(options.junit, reports::render_compare_junit(comparison));
  }
  return comparison.exit_code();
}

}  // namespace

void add_compare_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* compare = app.add_subcommand(
      "compare",
      "Compare a candidate with a baseline per workload and recipe (and per kernel suite case) "
      "and metric, with each recipe's speedup over BF16 and loss gap tracked across nights; "
      "exit 0: no regression, 1: a regression, 3: not enough data to decide, 2: bad input");
  compare
      ->add_option("--baseline", options->baseline,
                   "sweep:ID[,ID…], run:ID[,ID…], commit:SHA, nightly:N (the last N nightly runs "
                   "on this host) or since:TIME")
      ->required();
  compare->add_option("--candidate", options->candidate, "Same forms as --baseline")->required();
  compare->add_option("--db", options->db, "SQLite database to read")->capture_default_str();
  compare->add_option("--junit", options->junit, "Also write JUnit XML for CI to this file");
  compare->add_option("--markdown", options->markdown, "Also write the Markdown to this file");
  compare->add_flag("--allow-mismatch", options->policy.allow_mismatch,
                    "Judge runs of another workload, size, depth or GPU model too (refused "
                    "otherwise), with a warning in the verdict");
  compare->callback([&action, options] { action = [options] { return execute(*options); }; });
}

}  // namespace lpbench::cli
