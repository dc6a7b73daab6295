#include <fmt/format.h>

#include <memory>

#include "base/errors.h"
#include "base/store/store.h"
#include "harness/cli/commands.h"
#include "harness/cli/diagnostics_option.h"
#include "harness/cli/run_flags.h"
#include "harness/config/run_config.h"
#include "harness/runner/sweep_runner.h"

namespace lpbench::cli {

namespace {

// A label names a series of sweeps (e.g. "nightly") that reports and compare select by, so it
// is kept to characters that survive a command line and a file name unquoted.
void check_label(const std::string& label) {
  constexpr size_t kMaxLength = 64;
  const bool valid = !label.empty() && label.size() <= kMaxLength &&
                     label.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789._:-") == std::string::npos;
  if (!valid) {
    throw InputError(fmt::format(
        "--label '{}' is not a label: use 1 to {} letters, digits and . _ : -, e.g. nightly", label,
        kMaxLength));
  }
}

int execute(const config::RunConfig& config, const std::optional<std::string>& label,
            const std::string& command_line, bool dry_run) {
  // Everything is checked before the database is opened: bad input changes nothing.
  if (label) check_label(*label);
  const config::ResolvedRun run = config::resolve(config);
  if (dry_run) {
    fmt::print(
        "lpbench run --dry-run: the arguments are valid: {} workload{} × {} recipe{} "
        "would run on {} (nothing ran; {} was not opened)\n",
        run.workloads.size(), run.workloads.size() == 1 ? "" : "s", run.recipes.size(),
        run.recipes.size() == 1 ? "" : "s", run.device.str(), config.db);
    return 0;
  }
  store::Store store = store::Store::open(config.db, store::Store::Mode::write);
  const runner::SweepOutcome outcome = runner::run_sweep(run, store, command_line, label);

  fmt::print(stderr, "Recorded sweep {} in {}:", outcome.sweep_id, config.db);
  for (const runner::RunOutcome& r : outcome.runs) {
    fmt::print(stderr, " run {} {} {};", r.run_id, r.recipe, store::to_string(r.status));
  }
  fmt::print(stderr, "\nSee: lpbench report --db {} --sweep {}\n", config.db, outcome.sweep_id);
  return outcome.all_ok() ? 0 : 1;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action, const std::string& command_line) {
  auto config = std::make_shared<config::RunConfig>();
  auto label = std::make_shared<std::string>();
  CLI::App* run = app.add_subcommand(
      "run", "Train workloads under several recipes and record every step in the database");
  CLI::Option* label_option = add_run_flags(*run, *config, *label);
  auto diagnostics = std::make_shared<DiagnosticsOption>();
  diagnostics->add_to(*run);
  auto dry_run = std::make_shared<bool>(false);
  run->add_flag("--dry-run", *dry_run,
                "Check every argument as a run would (workload, recipes, memory plan, label) and "
                "exit 0 without running anything or opening the database");
  run->callback([&action, config, label, label_option, diagnostics, command_line, dry_run] {
    std::optional<std::string> chosen;
    if (label_option->count() > 0) chosen = *label;
    action = [config, chosen, diagnostics, command_line, dry_run] {
      config->diagnostics_every = diagnostics->every();
      return execute(*config, chosen, command_line, *dry_run);
    };
  });
}

}  // namespace lpbench::cli
