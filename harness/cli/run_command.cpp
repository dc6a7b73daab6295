#include <fmt/format.h>

#include <memory>

#include "harness/cli/commands.h"
#include "harness/config/run_config.h"
#include "harness/runner/sweep_runner.h"
#include "harness/store/store.h"

namespace lpbench::cli {

namespace {

int execute(const config::RunConfig& config, const std::string& command_line) {
  // Everything is checked before the database is opened: bad input changes nothing.
  const config::ResolvedRun run = config::resolve(config);
  store::Store store = store::Store::open(config.db, store::Store::Mode::write);
  const runner::SweepOutcome outcome = runner::run_sweep(run, store, command_line);

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
  CLI::App* run = app.add_subcommand(
      "run", "Train a workload under several recipes and record every step in the database");
  run->add_option("--workload", config->workload, "<level>:<model>, for example model:tiny")
      ->capture_default_str();
  run->add_option("--recipes", config->recipes,
                  "Comma-separated recipes, for example bf16,int8-tensor")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--steps", config->steps, "Optimizer steps per recipe")->capture_default_str();
  run->add_option("--warmup-steps", config->warmup_steps,
                  "Steps left out of the timing statistics (default: min(10, steps/10))");
  run->add_option("--seed", config->seed, "Seed of the initial weights and the data")
      ->capture_default_str();
  run->add_option("--micro-batch", config->micro_batch,
                  "Sequences per step (default: the model's)");
  run->add_option("--seq-len", config->seq_len, "Tokens per sequence (default: the model's)");
  run->add_option("--lr", config->lr, "Peak learning rate (default: the model's)");
  run->add_option("--data", config->data, "Token source: synthetic")->capture_default_str();
  run->add_option("--device", config->device, "auto, cpu, cuda or cuda:<index>")
      ->capture_default_str();
  run->add_option("--db", config->db, "SQLite database to record into")->capture_default_str();
  run->add_flag("!--no-interleave", config->interleave,
                "Run the recipes one after another instead of step by step in turn");
  run->callback([&action, config, command_line] {
    action = [config, command_line] { return execute(*config, command_line); };
  });
}

}  // namespace lpbench::cli
