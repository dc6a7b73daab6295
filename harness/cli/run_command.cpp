#include <fmt/format.h>

#include <memory>

#include "harness/cli/commands.h"
#include "harness/config/run_config.h"
#include "harness/errors.h"
#include "harness/runner/sweep_runner.h"
#include "harness/store/store.h"

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
            const std::string& command_line) {
  // Everything is checked before the database is opened: bad input changes nothing.
  if (label) check_label(*label);
  const config::ResolvedRun run = config::resolve(config);
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
  run->add_option("--workload", config->workloads,
                  "Comma-separated <level>:<model>[:<part>] or gemm:<M>x<N>x<K>; levels: gemm, "
                  "linear, layer, model")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--recipes", config->recipes,
                  "Comma-separated recipes, for example bf16,int8-tensor")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--model", config->model,
                  "Replace each workload's model: a built-in name or a Hugging Face config.json");
  run->add_option("--layers", config->layers,
                  "Model level: build this many layers at full width (default: all)");
  run->add_option("--steps", config->steps, "Steps per recipe")->capture_default_str();
  run->add_option("--warmup-steps", config->warmup_steps,
                  "Steps left out of the timing statistics (default: min(10, steps/10))");
  run->add_option("--seed", config->seed, "Seed of the initial weights and the data")
      ->capture_default_str();
  run->add_option("--micro-batch", config->micro_batch,
                  "Sequences per step (default: the model's)");
  run->add_option("--seq-len", config->seq_len, "Tokens per sequence (default: the model's)");
  run->add_option("--lr", config->lr, "Peak learning rate (default: the model's)");
  run->add_flag("--activation-checkpointing", config->activation_checkpointing,
                "Model level: recompute each layer's activations in backward");
  run->add_option("--data", config->data,
                  "Tokens: synthetic, a directory made by `lpbench data prepare`, or a token file")
      ->capture_default_str();
  run->add_option("--token-dtype", config->token_dtype, "Of a bare token file: uint16 or uint32")
      ->capture_default_str();
  run->add_option("--eval-every", config->eval_every,
                  "Validation loss every N steps (model level; default steps/10; 0: never)");
  run->add_option("--eval-batches", config->eval_batches, "Validation batches per evaluation")
      ->capture_default_str();
  run->add_option("--metrics-every", config->metrics_every,
                  "Per-step figures such as expert loads every N steps (0: never)")
      ->capture_default_str();
  run->add_option("--device", config->device, "auto, cpu, cuda or cuda:<index>")
      ->capture_default_str();
  run->add_option("--db", config->db, "SQLite database to record into")->capture_default_str();
  run->add_flag("--regions", config->regions,
                "Time the named regions (forward, gemm, quantize, ...) of every step with CUDA "
                "events; `lpbench report` shows the hotspots");
  run->add_option("--trace-step", config->trace_step,
                  "Capture this step with torch's profiler into a Chrome/Perfetto trace beside "
                  "the database");
  run->add_option("--int8-gemm", config->int8_gemm,
                  "GPU INT8 GEMM for tensor and row scales: cublaslt, lpbench or torch (the stock "
                  "at::_int_mm, a baseline); wgmma: lpbench's Hopper kernel for tensor, row and "
                  "block scales (sm_90 only, cublaslt elsewhere); all give the same bits")
      ->capture_default_str();
  run->add_flag("!--no-memory-plan", config->memory_plan,
                "Run what the memory plan says cannot fit (to test the device's limit: the run "
                "ends oom and the sweep goes on)");
  run->add_flag("!--no-interleave", config->interleave,
                "Run the recipes one after another instead of step by step in turn");
  CLI::Option* label_option =
      run->add_option("--label", *label,
                      "Record the sweep in a named series, e.g. nightly (reports and compare "
                      "select by it)");
  run->callback([&action, config, label, label_option, command_line] {
    std::optional<std::string> chosen;
    if (label_option->count() > 0) chosen = *label;
    action = [config, chosen, command_line] { return execute(*config, chosen, command_line); };
  });
}

}  // namespace lpbench::cli
