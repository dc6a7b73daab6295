#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/store/store.h"
#include "harness/cli/commands.h"
#include "harness/cli/diagnostics_option.h"
#include "harness/cli/run_flags.h"
#include "harness/config/run_config.h"
#include "harness/dist/launch_env.h"
#include "harness/dist/local_launcher.h"
#include "harness/dist/rendezvous.h"
#include "harness/dist/scratch_file.h"
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

void report_outcome(const runner::SweepOutcome& outcome, const std::string& db) {
  fmt::print(stderr, "Recorded sweep {} in {}:", outcome.sweep_id, db);
  for (const runner::RunOutcome& r : outcome.runs) {
    fmt::print(stderr, " run {} {} {};", r.run_id, r.recipe, store::to_string(r.status));
  }
  fmt::print(stderr, "\nSee: lpbench report --db {} --sweep {}\n", db, outcome.sweep_id);
}

// What every rank must agree on: its arguments (the launch's own variables aside).
std::string fingerprint(const config::RunConfig& config, const std::optional<std::string>& label) {
  nlohmann::json json = config;
  json["label_given"] = label.value_or("");
  return json.dump();
}

// A data-parallel rank: joins the others, then runs the sweep like one process, rank 0 into the
// database and every other rank into a scratch store of its own that is deleted after (the
// runner's path is the same on every rank, so their collectives line up).
runner::SweepOutcome run_as_rank(config::ResolvedRun& run, const dist::LaunchEnv& launch,
                                 const std::optional<std::string>& label,
                                 const std::string& command_line) {
  const config::RunConfig& config = run.config;
  run.group = dist::join(launch, run.device, fingerprint(config, label),
                         std::chrono::seconds(config.dist_timeout_s));
  for (config::ResolvedWorkload& w : run.workloads)
    w.training.group = run.group;
  if (launch.rank == 0) {
    store::Store store = store::Store::open(config.db, store::Store::Mode::write);
    return runner::run_sweep(run, store, command_line, label);
  }
  const dist::ScratchFile scratch(fmt::format("lpbench-rank{}", launch.rank));
  store::Store store = store::Store::open(scratch.path(), store::Store::Mode::write);
  return runner::run_sweep(run, store, command_line, label);
}

// --dry-run's memory plan of each layer or model workload: each recipe's planned peak and the
// largest micro-batch it fits at this depth and sequence length (the plan's peaks were within
// 0.6 GiB of the measured ones on llama2-7b, docs/perf-log.md §21).
void print_memory_plan(const config::ResolvedRun& run) {
  const std::string against =
      run.config.memory_budget_gib > 0.0
          ? fmt::format("{:.1f} GiB (--memory-budget-gib)", run.device_memory_gib)
          : fmt::format("{:.1f} GiB ({})", run.device_memory_gib, run.device.str());
  for (const config::ResolvedWorkload& w : run.workloads) {
    if (w.spec.level != workloads::Level::layer && w.spec.level != workloads::Level::model) {
      continue;
    }
    const std::string depth =
        w.spec.level == workloads::Level::layer
            ? std::string("one decoder layer")
            : fmt::format("{} layer{}", w.model.num_layers, w.model.num_layers == 1 ? "" : "s");
    fmt::print("\n{}: memory plan against {}, {}, micro-batch {} × {} tokens{}\n\n", w.spec.text(),
               against, depth, w.training.micro_batch, w.training.seq_len,
               w.training.activation_checkpointing ? ", activation checkpointing" : "");
    fmt::print("| recipe | planned peak GiB | activations GiB | fits | largest --micro-batch |\n");
    fmt::print("| :-- | --: | --: | :-- | --: |\n");
    for (size_t i = 0; i < run.recipes.size(); ++i) {
      const workloads::MemoryEstimate& e = w.memory.at(i);
      const config::LargestMicroBatch largest = config::largest_micro_batch(w, run, i);
      const std::string batch =
          largest.value == 0 ? std::string("none")
          : largest.at_limit
              ? fmt::format("{} (the most tokens a step; memory allows more)", largest.value)
              : std::to_string(largest.value);
      fmt::print("| {} | {:.1f} | {:.1f} | {} | {} |\n", run.recipes[i].name, e.total_gib(),
                 e.activations_gib, e.total_gib() <= run.device_memory_gib ? "yes" : "no", batch);
    }
    if (!w.interleave_note.empty()) fmt::print("\n{}: {}\n", w.spec.text(), w.interleave_note);
  }
}

int execute(config::RunConfig config, const std::optional<std::string>& label,
            const std::string& command_line, bool dry_run) {
  // Everything is checked before the database is opened: bad input changes nothing.
  if (label) check_label(*label);
  const std::optional<dist::LaunchEnv> launch = dist::launch_env_from_environment();
  if (launch) {
    config.world_size = launch->world_size;
    config.rank = launch->rank;
    config.local_rank = launch->local_rank;
  } else if (config.nproc_per_node > 1) {
    // Checked as the last rank on this machine would be: N processes need N GPUs.
    config.world_size = config.nproc_per_node;
    config.local_rank = config.nproc_per_node - 1;
  }
  config.plan_only = dry_run;
  config::ResolvedRun run = config::resolve(config);
  if (dry_run) {
    fmt::print(
        "lpbench run --dry-run: the arguments are valid: {} workload{} × {} recipe{} "
        "would run on {}{} (nothing ran; {} was not opened)\n",
        run.workloads.size(), run.workloads.size() == 1 ? "" : "s", run.recipes.size(),
        run.recipes.size() == 1 ? "" : "s", run.device.str(),
        config.world_size > 0 ? fmt::format(" as {} data-parallel ranks", config.world_size) : "",
        config.db);
    for (const config::ResolvedWorkload& w : run.workloads) {
      if (!w.plan_note.empty()) fmt::print("{}: {}\n", w.spec.text(), w.plan_note);
    }
    print_memory_plan(run);
    return 0;
  }
  if (!launch && config.nproc_per_node > 1) {
    return dist::launch_local(static_cast<int>(config.nproc_per_node),
                              std::chrono::seconds(config.dist_timeout_s), config.db);
  }
  if (launch) {
    const runner::SweepOutcome outcome = run_as_rank(run, *launch, label, command_line);
    if (launch->rank != 0) return outcome.all_ok() ? 0 : 1;
    report_outcome(outcome, config.db);
    return outcome.all_ok() ? 0 : 1;
  }
  store::Store store = store::Store::open(config.db, store::Store::Mode::write);
  const runner::SweepOutcome outcome = runner::run_sweep(run, store, command_line, label);
  report_outcome(outcome, config.db);
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
                "Check every argument as a run would (workload, recipes, memory plan, label), "
                "print each layer or model workload's memory plan (each recipe's planned peak and "
                "the largest micro-batch it fits) and exit 0 without running anything or opening "
                "the database");
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
