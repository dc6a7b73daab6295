#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "base/stats/prediction.h"
#include "base/stats/stats.h"
#include "reports/compare_parts.h"
#include "reports/run_summary.h"
#include "reports/speedup.h"

// The tracked ratios of a nightly comparison: per night, a recipe's speedup over the BF16 run of
// its own sweep and its loss gap to that run, and a kernel's speedup over its BF16 twin.
namespace lpbench::reports::detail {

namespace {

std::vector<double> measured_step_ms(const std::vector<store::StepRecord>& steps) {
  std::vector<double> times;
  for (const store::StepRecord& s : steps) {
    if (!s.warmup && s.step_ms > 0.0) times.push_back(s.step_ms);
  }
  return times;
}

// The BF16 run of `run`'s sweep with the same workload and step size that ended ok.
std::optional<store::RunRecord> bf16_twin(const store::Store& store, const store::RunRecord& run) {
  for (store::RunRecord& other : store.runs(run.sweep_id)) {
    if (other.recipe == "bf16" && other.workload == run.workload &&
        other.tokens_per_step == run.tokens_per_step && other.status == store::RunStatus::ok) {
      return std::move(other);
    }
  }
  return std::nullopt;
}

Night night_of(const store::Store& store, const store::RunRecord& run, double value, double low,
               double high) {
  return {
      run.sweep_id, sweep_started_at(store, run.sweep_id), run.provenance.git_commit, value, low,
      high};
}

// The stored summary of a kernel result: its samples where schema 6 wrote them, else the row's.
std::optional<stats::Summary> kernel_summary(const store::Store& store,
                                             const store::KernelResultRecord& k) {
  if (k.status != "ok" || !k.median_ms) return std::nullopt;
  const std::vector<double> samples = store.kernel_samples(k.id);
  if (!samples.empty()) return stats::summarize(samples);
  stats::Summary s;
  s.count = k.samples;
  s.median = *k.median_ms;
  s.p10 = k.p10_ms.value_or(s.median);
  s.p90 = k.p90_ms.value_or(s.median);
  return s;
}

}  // namespace

std::optional<Night> speedup_night(const store::Store& store, const store::RunRecord& run) {
  if (run.status != store::RunStatus::ok) return std::nullopt;
  const std::optional<store::RunRecord> twin = bf16_twin(store, run);
  if (!twin || twin->id == run.id) return std::nullopt;
  const std::vector<double> mine = measured_step_ms(store.steps(run.id));
  const std::vector<double> theirs = measured_step_ms(store.steps(twin->id));
  if (mine.empty() || theirs.empty()) return std::nullopt;
  const Speedup s = speedup(stats::summarize(theirs), stats::summarize(mine));
  return night_of(store, run, s.ratio, s.low, s.high);
}

std::optional<Night> loss_gap_night(const store::Store& store, const store::RunRecord& run) {
  if (run.status != store::RunStatus::ok) return std::nullopt;
  const std::optional<store::RunRecord> twin = bf16_twin(store, run);
  if (!twin || twin->id == run.id) return std::nullopt;
  const std::optional<double> mine = run_final_loss(run, store.steps(run.id));
  const std::optional<double> theirs = run_final_loss(*twin, store.steps(twin->id));
  if (!mine || !theirs || !std::isfinite(*theirs) || *theirs == 0.0) return std::nullopt;
  const double gap = *mine / *theirs - 1.0;
  return night_of(store, run, gap, gap, gap);
}

std::optional<Night> kernel_speedup_night(
    const store::Store& store, const store::KernelResultRecord& result,
    const std::vector<store::KernelResultRecord>& sweep_results) {
  if (result.op != "gemm" || result.recipe == "bf16") return std::nullopt;
  const std::optional<stats::Summary> mine = kernel_summary(store, result);
  if (!mine) return std::nullopt;
  for (const store::KernelResultRecord& other : sweep_results) {
    const bool twin = other.op == "gemm" && other.recipe == "bf16" && other.model == result.model &&
                      other.part == result.part && other.gemm == result.gemm &&
                      other.m == result.m && other.n == result.n && other.k == result.k;
    if (!twin) continue;
    const std::optional<stats::Summary> theirs = kernel_summary(store, other);
    if (!theirs) return std::nullopt;
    const Speedup s = speedup(*theirs, *mine);
    const nlohmann::json config = nlohmann::json::parse(result.config_json, nullptr, false);
    const std::string commit =
        config.is_object() ? config.value("git_commit", std::string()) : std::string();
    return Night{result.sweep_id, sweep_started_at(store, result.sweep_id), commit, s.ratio, s.low,
                 s.high};
  }
  return std::nullopt;
}

MetricResult compare_ratio(Metric metric, const std::vector<Night>& baseline,
                           const std::vector<Night>& candidate, const ComparePolicy& policy) {
  const bool speed = metric == Metric::speedup_vs_bf16;
  auto values = [](const std::vector<Night>& nights) {
    std::vector<double> v;
    for (const Night& n : nights)
      v.push_back(n.value);
    return v;
  };
  const std::vector<double> base = values(baseline);
  const std::vector<double> cand = values(candidate);
  auto text = [&](double v) { return speed ? fmt::format("{:.3f}×", v) : percent(v, 2); };
  auto figure = [&](const std::vector<double>& v) {
    const stats::Summary s = stats::summarize(v);
    if (v.size() == 1) return text(s.median);
    return fmt::format("{} ({}–{}), {} nights", text(s.median), text(s.min), text(s.max), v.size());
  };
  MetricResult r;
  r.metric = metric;
  r.baseline = figure(base);
  r.candidate = figure(cand);
  r.change = "—";
  // Three nights at least, for a speedup and a loss gap alike: a GPU trains a little differently
  // every night (the gap of an unchanged recipe moved by 1.4 points between two H100 nights).
  const size_t needed = kRunsForSpread;
  if (base.size() < needed) {
    r.verdict = Verdict::unsure;
    r.reason = fmt::format("the baseline holds {} night{} of this ratio; {} needed", base.size(),
                           base.size() == 1 ? "" : "s", needed);
    return r;
  }
  const stats::Summary b = stats::summarize(base);
  const double c = stats::summarize(cand).median;
  if (speed) {
    // The candidate's own range: the lowest and highest its spreads allow over its nights.
    double c_low = candidate.front().low, c_high = candidate.front().high;
    for (const Night& n : candidate) {
      c_low = std::min(c_low, n.low);
      c_high = std::max(c_high, n.high);
    }
    const double rel = c / b.median - 1.0;
    // One more unchanged night falls inside the baseline nights' prediction interval; a ratio
    // outside it is beyond what nights vary.
    const std::optional<stats::Interval> pi = stats::prediction_interval(base, policy.alpha);
    const double pi_low = pi ? pi->low : b.min;
    const double pi_high = pi ? pi->high : b.max;
    r.change = fmt::format(
        "{} (candidate range {:.3f}–{:.3f}; threshold ±{}; the nights' {:.0f} % prediction "
        "interval {:.3f}–{:.3f})",
        percent(rel), c_low, c_high, magnitude(policy.min_effect), 100.0 * (1.0 - policy.alpha),
        pi_low, pi_high);
    if (rel <= -policy.min_effect && c < std::min(b.min, pi_low) && c_high < b.median) {
      r.verdict = Verdict::regressed;
      r.reason =
          "the speedup fell below every baseline night's, beyond the threshold, and its "
          "own range lies below their median";
    } else if (rel >= policy.min_effect && c > std::max(b.max, pi_high) && c_low > b.median) {
      r.verdict = Verdict::improved;
      r.reason =
          "the speedup rose above every baseline night's, beyond the threshold, and its "
          "own range lies above their median";
    } else if (std::abs(rel) < policy.min_effect || (c >= pi_low && c <= pi_high) ||
               (c >= b.min && c <= b.max)) {
      r.verdict = Verdict::same;
      r.reason =
          "within the threshold of the baseline nights' median, their range or their "
          "prediction interval";
    } else {
      r.verdict = Verdict::unsure;
      r.reason =
          "beyond the baseline nights' range, but the candidate's own range reaches "
          "their median";
    }
    return r;
  }
  // A loss gap, in parts of the BF16 loss: worse when it grows.
  const double band = policy.loss_band;
  // Where three nights or more give one, the gap must also leave their prediction interval.
  std::optional<stats::Interval> pi;
  if (base.size() >= kRunsForSpread) pi = stats::prediction_interval(base, policy.loss_alpha);
  const double worse_above = std::max(b.max + band, pi ? pi->high : b.max);
  const double better_below = std::min(b.min - band, pi ? pi->low : b.min);
  r.change = fmt::format("{:+.2f} points (band ±{:.2f} points; worse above {:+.2f})",
                         100.0 * (c - b.median), 100.0 * band, 100.0 * worse_above);
  if (c > worse_above) {
    r.verdict = Verdict::regressed;
    r.reason =
        "the gap to BF16 grew beyond every baseline night's by more than the band, and beyond "
        "their prediction interval";
  } else if (c < better_below) {
    r.verdict = Verdict::improved;
    r.reason = "the gap to BF16 shrank below every baseline night's by more than the band";
  } else {
    r.verdict = Verdict::same;
    r.reason = "within the band of the baseline nights' gaps";
  }
  return r;
}

}  // namespace lpbench::reports::detail
