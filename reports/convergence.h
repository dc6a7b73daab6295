#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/store/records.h"
#include "base/store/store.h"

// Does a recipe train like BF16? Each recipe's final validation loss, over one or more seeds,
// against the band BF16's seeds span, under a rule stated with the verdict.
namespace lpbench::reports {

// One run's end: its final validation loss (the last evaluation; the final training loss where
// the run evaluated nothing) and how it ended.
struct SeedResult {
  std::string recipe;
  uint64_t seed = 0;
  store::RunStatus status = store::RunStatus::ok;
  std::optional<double> final_loss;
  bool validation = true;          // false: final_loss is the training loss
  int64_t instability_events = 0;  // loss spikes, gradient norm growth, non-finite values
  std::string workload;
  int64_t steps_done = 0, steps_planned = 0;  // steps recorded (warm-up included), configured
};

// The parity rule: a recipe is at parity when the mean of its seeds' final validation losses is
// at most the highest BF16 seed's times (1 + tolerance). Lower is never held against it. Runs
// shorter than min_steps (BF16's or the recipe's) are not judged: after a few steps the loss
// tells the initialization, not the training (a benchmark's 10 steps once read "parity" here).
struct ParityRule {
  double tolerance = 0.01;
  int64_t min_steps = 100;
  std::string describe() const;
};

// incomplete: a run stopped early (interrupted) and no finished run of its recipe and seed
// replaced it; its last validation loss is from an earlier step, so it is not judged.
// too_short: the recipe's or BF16's runs took fewer than the rule's min_steps; the gap is shown.
enum class Parity { baseline, parity, outside, diverged, incomplete, too_short, no_data };
std::string_view to_string(Parity parity);

struct RecipeVerdict {
  std::string recipe;
  int64_t seeds = 0;
  std::optional<double> mean, min, max;  // of the final losses
  std::optional<double> gap_pct;         // mean against BF16's mean
  int64_t instability_events = 0;
  int64_t fewest_steps = 0;  // of its seeds' runs
  Parity verdict = Parity::no_data;
  std::string why;
};

// Groups `results` by recipe (in first-seen order) and judges each against the "bf16" seeds.
std::vector<RecipeVerdict> judge(const std::vector<SeedResult>& results, const ParityRule& rule);

// The model-level runs of the given sweeps, as seed results (the seed from each run's config).
// An interrupted run is left out where a finished run of the same recipe and seed exists (it was
// run again); throws InputError where the sweeps hold more than one workload.
std::vector<SeedResult> collect_seed_results(const store::Store& store,
                                             const std::vector<int64_t>& sweep_ids);

// The verdict table, the rule, and a note where BF16 ran fewer than two seeds (no spread).
std::string render_verdicts(const std::vector<RecipeVerdict>& verdicts, const ParityRule& rule);

// Whether every recipe is at parity (the baseline counts as at parity).
bool all_at_parity(const std::vector<RecipeVerdict>& verdicts);

}  // namespace lpbench::reports
