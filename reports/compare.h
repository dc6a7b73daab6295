#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/store/store.h"
#include "reports/selection.h"

namespace lpbench::reports {

// What a metric did from baseline to candidate. `regressed` for step time reads SLOWER, for
// memory or loss WORSE; `unsure` means the data cannot tell (too few samples, a spread too wide,
// configurations that differ).
enum class Verdict { improved, regressed, same, unsure };

// kernel_ms: a kernel suite case's time per call. speedup_vs_bf16 and loss_gap_vs_bf16 are the
// tracked ratios: a recipe's speedup over the BF16 run (or a kernel's over its BF16 twin) of the
// same sweep, and its final loss over that BF16 run's, minus 1; each is measured within one
// night, so a ratio moves far less with the machine or the clock a night got than a time does.
enum class Metric {
  status,
  step_ms,
  tokens_per_s,
  peak_mem_gib,
  final_loss,
  kernel_ms,
  speedup_vs_bf16,
  loss_gap_vs_bf16
};
std::string_view to_string(Metric metric);
bool is_speed(Metric metric);
// FASTER / SLOWER for speed (times, tokens/s and speedups), BETTER / WORSE for status, memory and
// loss; SAME; UNSURE.
std::string_view verdict_word(Metric metric, Verdict verdict);

// The thresholds a verdict is made with; every one is printed with the comparison.
struct ComparePolicy {
  double alpha = 0.01;       // the confidence interval of a shift is 1 − alpha
  double min_effect = 0.02;  // a step-time shift smaller than this is SAME
  // The same for a kernel suite case's time per call and its ratio to the BF16 twin: a sub-ms
  // call timed over a few iterations moves more from night to night than a step does (five
  // unchanged H100 nights, 2026-11-25: 3 % at p90 and 9 % at p99 of the cases' times, 4 % and
  // 11 % of their ratios), so 2 % would call noise a regression every night.
  double kernel_min_effect = 0.10;
  int64_t min_samples = 5;         // measured steps needed on each side
  double memory_tolerance = 0.02;  // allocator rounding and fragmentation
  double loss_band = 0.01;         // parity band of the final loss, same seed and data
  // The prediction interval a final loss or a loss gap must leave, at 1 − loss_alpha: a night
  // judges each recipe's loss and gap (a GPU night: 20 of them), so at 1 − alpha each one night
  // in five would call an unchanged loss worse (a GPU night, 2026-11-25: int8-block's final loss
  // 1.02 % above four nights' mean, against a 99 % band of 1.01 %). 0.001 keeps the whole night's
  // false alarms near 2 % (Bonferroni over about ten independent losses at 1 %).
  double loss_alpha = 0.001;
  // Judge runs that are not alike (another workload, step size, depth or GPU model): refused
  // otherwise; with it, every verdict carries a warning.
  bool allow_mismatch = false;
};

struct MetricResult {
  Metric metric = Metric::step_ms;
  Verdict verdict = Verdict::unsure;
  std::string baseline;   // the figure with its spread, e.g. "60.22 (55.58–78.37), 3 runs"
  std::string candidate;  // likewise
  std::string change;     // the change with its interval or tolerance, never bare
  std::string reason;     // why this verdict
  // A regression across nights: the first night that reads as bad and the last good one before
  // it, with their commits and the `git log` that lists what changed between them.
  std::string culprit;
};

// One workload and recipe (or one kernel suite case), measured on both sides.
struct GroupResult {
  enum class Kind { runs, kernel_results };
  Kind kind = Kind::runs;
  std::string workload;  // for a kernel case: "gemm llama2-7b qkv fprop 4096×12288×4096"
  std::string recipe;    // for a kernel case: the recipe and its variant
  std::vector<int64_t> baseline_runs;
  std::vector<int64_t> candidate_runs;
  std::vector<MetricResult> metrics;
};

struct Comparison {
  std::string baseline_spec;
  std::string candidate_spec;
  ComparePolicy policy;
  std::vector<GroupResult> groups;
  std::vector<std::string> notes;     // unmatched groups, conditions that differ
  std::vector<std::string> warnings;  // what --allow-mismatch let through, in the verdict

  int regressions() const;
  int unsure() const;
  // 0: no regression; 1: a regression; 3: not enough data to decide (nothing compared, or a
  // metric UNSURE and none regressed).
  int exit_code() const;
};

// Compares each workload and recipe present on both sides; when each side is one run, the two
// runs, whatever their recipe (e.g. bf16 against int8-tensor). Kernel suite results are compared
// per case (model, product, shape, recipe, variant) by the same statistics on their timed
// samples. Across sweeps, each recipe's speedup over the BF16 run of its own sweep (and each
// kernel's over its BF16 twin) and its loss gap to that run are compared night against nights,
// and a regression names the night that introduced it. Runs that are not alike (another
// workload, micro-batch × sequence length, depth or GPU model) are refused with an InputError
// naming the difference, unless the policy allows them. A speed verdict needs the statistical
// test and the speedup rule (reports/speedup.h) to agree, and no run measured under contention.
Comparison compare_runs(const store::Store& store, const SelectedPair& runs,
                        const std::string& baseline_spec, const std::string& candidate_spec,
                        const ComparePolicy& policy = {});

}  // namespace lpbench::reports
