#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "base/errors.h"
#include "base/store/store.h"
#include "harness/cli/commands.h"
#include "harness/cli/diagnostics_option.h"
#include "harness/cli/output_paths.h"
#include "harness/config/run_config.h"
#include "harness/runner/sweep_runner.h"
#include "reports/chart.h"
#include "reports/convergence.h"
#include "reports/frontier.h"

// `lpbench converge`: the stability question of the seed paper as one command. Each recipe
// trains the model from the same seeds on the same data, with validation along the way; the
// verdict table judges each recipe's final validation loss against BF16's band under a stated
// rule. With --sweeps it judges sweeps already in the store and trains nothing.
namespace lpbench::cli {

namespace {

struct ConvergeOptions {
  config::RunConfig run;
  int64_t seeds = 1;
  double tolerance_pct = 1.0;
  int64_t min_steps = reports::ParityRule{}.min_steps;
  std::string label = "converge";
  std::vector<int64_t> sweeps;
  bool judge = false;                 // judge every sweep labelled --label already in the store
  std::optional<int64_t> speed_from;  // the GPU sweep the frontier's speedups come from
  std::string frontier_svg;           // empty: no chart file
};

constexpr int64_t kMaxSeeds = 100;

int judge_and_print(const store::Store& store, const std::vector<int64_t>& sweeps,
                    const ConvergeOptions& o) {
  const reports::ParityRule rule{o.tolerance_pct / 100.0, o.min_steps};
  const auto verdicts = reports::judge(reports::collect_seed_results(store, sweeps), rule);
  std::string ids;
  for (int64_t id : sweeps)
    ids += (ids.empty() ? "" : ",") + std::to_string(id);
  fmt::print("## Convergence: sweeps {} in {}\n\n{}", ids, o.run.db,
             reports::render_verdicts(verdicts, rule));
  const reports::Frontier frontier = reports::build_frontier(store, verdicts, o.speed_from);
  fmt::print("\n{}", reports::render_frontier(frontier));
  if (!o.frontier_svg.empty()) {
    const reports::Chart chart = reports::frontier_chart(frontier);
    if (reports::has_data(chart)) {
      write_text_file(o.frontier_svg, reports::render_svg(*reports::find_gnuplot(), chart));
      fmt::print(stderr, "Wrote the frontier chart to {}\n", o.frontier_svg);
    } else {
      fmt::print(stderr, "No frontier chart: no recipe has both a speedup and a loss gap\n");
    }
  }
  return reports::all_at_parity(verdicts) ? 0 : 1;
}

int execute(ConvergeOptions o, const std::string& command_line) {
  // Everything is checked before the database is opened for writing: bad input changes nothing.
  if (o.seeds < 1 || o.seeds > kMaxSeeds) {
    throw InputError(fmt::format("--seeds {} is out of range: use 1 to {}", o.seeds, kMaxSeeds));
  }
  if (!o.frontier_svg.empty()) {
    check_output_file("--frontier-svg", o.frontier_svg);
    if (!reports::find_gnuplot()) {
      throw InputError(
          "--frontier-svg needs gnuplot to draw the chart and none is on PATH; install Debian's "
          "gnuplot-nox (scripts/setup does), or leave out --frontier-svg for the table alone");
    }
  }
  if (o.speed_from) {
    if (*o.speed_from < 1) {
      throw InputError(
          fmt::format("--speed-from {} is not a sweep id: give a positive number", *o.speed_from));
    }
    // The sweep must be there before anything trains (the frontier is printed at the end).
    const store::Store store = store::Store::open(o.run.db, store::Store::Mode::read);
    reports::build_frontier(store, {}, o.speed_from);
  }
  if (!(o.tolerance_pct >= 0.0) || o.tolerance_pct > 100.0) {
    throw InputError(fmt::format("--tolerance {} is not a percentage: use 0 to 100, e.g. 1 for 1 %",
                                 o.tolerance_pct));
  }
  if (o.min_steps < 1) {
    throw InputError(fmt::format("--min-steps {} is not a step count: give 1 or more (default {})",
                                 o.min_steps, reports::ParityRule{}.min_steps));
  }
  if (o.judge) {
    if (!o.sweeps.empty()) throw InputError("--judge and --sweeps both pick sweeps: give one");
    const store::Store store = store::Store::open(o.run.db, store::Store::Mode::read);
    for (const store::SweepRecord& s : store.sweeps()) {
      if (s.label == o.label) o.sweeps.push_back(s.id);
    }
    if (o.sweeps.empty()) {
      throw InputError(fmt::format("no sweep in {} is labelled '{}': see `lpbench list sweeps`",
                                   o.run.db, o.label));
    }
    return judge_and_print(store, o.sweeps, o);
  }
  if (!o.sweeps.empty()) {
    const store::Store store = store::Store::open(o.run.db, store::Store::Mode::read);
    for (int64_t id : o.sweeps) {
      if (!store.sweep(id)) {
        throw InputError(fmt::format("sweep {} is not in {}: see `lpbench list sweeps --db {}`", id,
                                     o.run.db, o.run.db));
      }
    }
    return judge_and_print(store, o.sweeps, o);
  }
  // BF16 is the band every recipe is judged against: without it the whole run would be wasted.
  if (std::find(o.run.recipes.begin(), o.run.recipes.end(), "bf16") == o.run.recipes.end()) {
    throw InputError(
        "--recipes has no bf16: add bf16, the baseline every verdict is judged against");
  }
  if (o.run.steps < o.min_steps) {
    fmt::print(stderr,
               "note: --steps {} is under --min-steps {}: the runs are recorded, their verdicts "
               "will read 'too short'\n",
               o.run.steps, o.min_steps);
  }
  o.run.workloads = {"model:" + (o.run.model.empty() ? std::string("small") : o.run.model)};
  o.run.model.clear();
  if (o.run.eval_every < 0) o.run.eval_every = std::max<int64_t>(1, o.run.steps / 20);
  std::vector<config::ResolvedRun> runs;
  const uint64_t first_seed = o.run.seed;
  for (int64_t i = 0; i < o.seeds; ++i) {
    config::RunConfig c = o.run;
    c.seed = first_seed + static_cast<uint64_t>(i);
    runs.push_back(config::resolve(c));
  }

  store::Store store = store::Store::open(o.run.db, store::Store::Mode::write);
  std::vector<int64_t> sweeps;
  bool all_ok = true;
  for (const config::ResolvedRun& run : runs) {
    const runner::SweepOutcome outcome = runner::run_sweep(run, store, command_line, o.label);
    sweeps.push_back(outcome.sweep_id);
    all_ok = all_ok && outcome.all_ok();
    fmt::print(stderr, "Recorded sweep {} (seed {}) in {}\n", outcome.sweep_id, run.config.seed,
               o.run.db);
  }
  const int verdict = judge_and_print(store, sweeps, o);
  return all_ok ? verdict : 1;
}

}  // namespace

void add_converge_command(CLI::App& app, Action& action, const std::string& command_line) {
  auto o = std::make_shared<ConvergeOptions>();
  o->run.recipes = {"bf16", "int8-tensor", "int8-block", "int8-fallback", "fp8-tensor"};
  o->run.steps = 2000;
  CLI::App* cmd = app.add_subcommand(
      "converge",
      "Train a model under each recipe from the same seeds and judge each final validation loss "
      "against BF16's (exit 1 when a recipe is not at parity)");
  cmd->add_option("--model", o->run.model, "A built-in model or a config.json (default: small)");
  cmd->add_option("--recipes", o->run.recipes, "Comma-separated recipes; bf16 is the baseline")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--steps", o->run.steps, "Steps per recipe")->capture_default_str();
  cmd->add_option("--seeds", o->seeds, "Seeds per recipe (BF16's band needs 2 or more)")
      ->capture_default_str();
  cmd->add_option("--seed", o->run.seed, "The first seed")->capture_default_str();
  cmd->add_option("--data", o->run.data,
                  "Tokens: synthetic, a directory made by `lpbench data prepare`, or a token file")
      ->capture_default_str();
  cmd->add_option("--layers", o->run.layers, "Build this many layers at full width");
  cmd->add_option("--micro-batch", o->run.micro_batch,
                  "Sequences per step (default, or 0: the model's)");
  cmd->add_option("--seq-len", o->run.seq_len, "Tokens per sequence (default, or 0: the model's)");
  cmd->add_option("--lr", o->run.lr, "Peak learning rate (default, or 0: the model's)");
  cmd->add_option("--eval-every", o->run.eval_every, "Validation every N steps (default steps/20)");
  cmd->add_option("--eval-batches", o->run.eval_batches, "Validation batches per evaluation")
      ->capture_default_str();
  cmd->add_option("--tolerance", o->tolerance_pct,
                  "Parity tolerance in percent above BF16's highest seed")
      ->capture_default_str();
  cmd->add_option("--min-steps", o->min_steps,
                  "Judge only runs of at least this many steps (shorter: 'too short')")
      ->capture_default_str();
  cmd->add_option("--label", o->label, "The sweeps' label")->capture_default_str();
  cmd->add_option("--sweeps", o->sweeps,
                  "Judge these sweeps (comma-separated ids) already in the store; trains nothing")
      ->delimiter(',');
  cmd->add_flag("--judge", o->judge,
                "Judge every sweep labelled --label already in the store; trains nothing");
  cmd->add_option("--speed-from", o->speed_from,
                  "The GPU sweep whose layer runs give each recipe's speedup for the speed "
                  "against accuracy table (default: the newest such sweep in the database)");
  cmd->add_option("--frontier-svg", o->frontier_svg,
                  "Also draw speed against accuracy (loss gap against speedup) into this SVG");
  cmd->add_option("--fusion", o->run.fusion,
                  "Operators: fused, none or auto (fused on a GPU); see lpbench run --help")
      ->capture_default_str();
  cmd->add_option("--device", o->run.device, "auto, cpu, cuda or cuda:<index>")
      ->capture_default_str();
  cmd->add_option("--db", o->run.db, "SQLite database")->capture_default_str();
  auto diagnostics = std::make_shared<DiagnosticsOption>();
  diagnostics->add_to(*cmd);
  cmd->callback([&action, o, diagnostics, command_line] {
    action = [o, diagnostics, command_line] {
      o->run.diagnostics_every = diagnostics->every();
      return execute(*o, command_line);
    };
  });
}

}  // namespace lpbench::cli
