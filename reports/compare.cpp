#include "reports/compare.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "base/errors.h"
#include "base/stats/prediction.h"
#include "base/stats/shift_test.h"
#include "base/stats/stats.h"
#include "reports/compare_parts.h"
#include "reports/run_summary.h"
#include "reports/selection.h"
#include "reports/speedup.h"

namespace lpbench::reports {

namespace detail {

std::string sweep_started_at(const store::Store& store, int64_t sweep_id) {
  const std::optional<store::SweepRecord> sweep = store.sweep(sweep_id);
  return sweep ? sweep->started_at : std::string();
}

std::string runs_text(size_t runs) {
  return fmt::format("{} run{}", runs, runs == 1 ? "" : "s");
}

std::string percent(double fraction, int decimals) {
  if (std::isinf(fraction)) return fraction > 0 ? "+∞ %" : "−∞ %";
  return fmt::format("{:+.{}f} %", 100.0 * fraction, decimals);
}

// A tolerance or threshold, written after a ±.
std::string magnitude(double fraction, int decimals) {
  return fmt::format("{:.{}f} %", 100.0 * fraction, decimals);
}

std::string range_text(const std::vector<double>& values, std::string_view format) {
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  return fmt::format("{}–{}", fmt::format(fmt::runtime(format), *low),
                     fmt::format(fmt::runtime(format), *high));
}

}  // namespace detail

namespace {

using detail::magnitude;
using detail::Night;
using detail::percent;
using detail::range_text;
using detail::runs_text;
using detail::Side;

// How a run was trained, as far as a loss comparison cares: same seed, data and schedule.
struct TrainingSignature {
  std::string text;
  bool operator==(const TrainingSignature& other) const { return text == other.text; }
};

TrainingSignature training_signature(const store::RunRecord& run) {
  const nlohmann::json config = nlohmann::json::parse(run.config_json, nullptr, false);
  if (config.is_discarded() || !config.contains("training")) return {"unknown"};
  const nlohmann::json& t = config["training"];
  const int64_t accum = t.value("grad_accum", int64_t{1});
  return {fmt::format("steps {}, seed {}, micro-batch {}{}, seq-len {}, lr {}, data {}",
                      t.value("steps", 0), t.value("seed", 0), t.value("micro_batch", 0),
                      accum > 1 ? fmt::format(" × {} accumulated", accum) : "",
                      t.value("seq_len", 0), t.value("lr", 0.0), run.data.value_or("?"))};
}

// "micro-batch 8 × seq-len 64" where the run recorded its sizes, else its tokens per step.
std::string step_size(const store::RunRecord& run) {
  const nlohmann::json config = nlohmann::json::parse(run.config_json, nullptr, false);
  if (!config.is_discarded() && config.contains("training")) {
    const nlohmann::json& t = config["training"];
    if (t.contains("micro_batch") && t.contains("seq_len")) {
      const int64_t accum = t.value("grad_accum", int64_t{1});
      return fmt::format("{}micro-batch {} × seq-len {}",
                         accum > 1 ? fmt::format("{} × ", accum) : "", t.value("micro_batch", 0),
                         t.value("seq_len", 0));
    }
  }
  return fmt::format("{} tokens per step", run.tokens_per_step);
}

// What differs between two runs that a verdict cannot see past (the recipe may differ: that is
// what a comparison of bf16 against int8-tensor is for); empty when they are alike.
std::string unlike(const store::RunRecord& b, const store::RunRecord& c) {
  std::vector<std::string> why;
  auto differs = [&](std::string_view what, const std::string& x, const std::string& y) {
    if (x != y) why.push_back(fmt::format("{} {} against {}", what, y, x));
  };
  differs("workload", b.workload, c.workload);
  differs("size", step_size(b), step_size(c));
  auto depth = [](const store::RunRecord& r) {
    return r.layers_run ? fmt::format("{} layers", *r.layers_run) : std::string("unknown");
  };
  differs("depth", depth(b), depth(c));
  differs("GPU", gpu_model(b), gpu_model(c));
  // A step replayed from a CUDA graph has no host launch gaps: against an eager one, the
  // difference in time is the replay's, not the code's.
  auto graph = [](const store::RunRecord& r) {
    return std::string(replayed_from_graph(r) ? "steps from a CUDA graph" : "eager steps");
  };
  differs("execution", graph(b), graph(c));
  // Fused operators against libtorch's unfused ones: the difference in time is the operators'
  // (what `--fusion` ablates), not the change under test.
  auto operators = [](const store::RunRecord& r) {
    const nlohmann::json config = nlohmann::json::parse(r.config_json, nullptr, false);
    if (config.is_object() && config.contains("training") && config["training"].is_object()) {
      const auto it = config["training"].find("fusion");
      if (it != config["training"].end() && it->is_string()) {
        return "--fusion " + it->get<std::string>();
      }
    }
    return std::string("not recorded");
  };
  differs("operators", operators(b), operators(c));
  std::string text;
  for (const std::string& w : why)
    text += (text.empty() ? "" : "; ") + w;
  return text;
}

// Refuses (or, allowed, warns about) runs that are not alike, naming the first pair that differs.
void check_alike(const std::vector<store::RunRecord>& baseline,
                 const std::vector<store::RunRecord>& candidate, const ComparePolicy& policy,
                 std::vector<std::string>& warnings) {
  const store::RunRecord& reference = candidate.front();
  for (const auto* side : {&baseline, &candidate}) {
    for (const store::RunRecord& run : *side) {
      const std::string why = unlike(run, reference);
      if (why.empty()) continue;
      const std::string text =
          fmt::format("run {} and run {} are not alike ({})", reference.id, run.id, why);
      if (!policy.allow_mismatch) {
        throw InputError(text +
                         "; compare runs of one workload, size, depth, GPU model, execution "
                         "and operator set, or pass --allow-mismatch to judge them anyway, with "
                         "a warning");
      }
      warnings.push_back(text);
      return;
    }
  }
}

Side collect(const store::Store& store, std::vector<store::RunRecord> runs) {
  Side side;
  side.runs = std::move(runs);
  for (const store::RunRecord& run : side.runs) {
    const bool failed = run.status != store::RunStatus::ok;
    const std::string night = detail::sweep_started_at(store, run.sweep_id);
    const double failed_value = failed ? 1.0 : 0.0;
    side.nights_failed.push_back(
        {run.sweep_id, night, run.provenance.git_commit, failed_value, failed_value, failed_value});
    if (failed) continue;
    side.ok.push_back(&run);
    ++side.ok_count;
    const std::vector<store::StepRecord> steps = store.steps(run.id);
    std::vector<double> times;
    std::vector<double> rates;
    std::optional<double> peak;
    for (const store::StepRecord& s : steps) {
      if (s.warmup || !(s.step_ms > 0.0)) continue;
      times.push_back(s.step_ms);
      rates.push_back(static_cast<double>(s.tokens) / (s.step_ms / 1000.0));
      if (s.peak_mem_gib) peak = std::max(peak.value_or(0.0), *s.peak_mem_gib);
    }
    if (!times.empty()) {
      const double ms = stats::summarize(times).median;
      const double tps = stats::summarize(rates).median;
      side.run_median_ms.push_back(ms);
      side.run_median_tokens_per_s.push_back(tps);
      side.nights_ms.push_back({run.sweep_id, night, run.provenance.git_commit, ms, ms, ms});
      side.nights_tokens_per_s.push_back(
          {run.sweep_id, night, run.provenance.git_commit, tps, tps, tps});
    }
    side.step_ms.insert(side.step_ms.end(), times.begin(), times.end());
    side.tokens_per_s.insert(side.tokens_per_s.end(), rates.begin(), rates.end());
    if (peak) {
      side.peaks.push_back(*peak);
      side.nights_peak.push_back(
          {run.sweep_id, night, run.provenance.git_commit, *peak, *peak, *peak});
    }
    if (std::optional<double> loss = run_final_loss(run, steps)) {
      side.final_losses.emplace_back(&run, *loss);
      side.nights_loss.push_back(
          {run.sweep_id, night, run.provenance.git_commit, *loss, *loss, *loss});
    }
  }
  return side;
}

}  // namespace

namespace detail {

// A speed metric (step time, lower is better; tokens/s, higher is better): the Hodges–Lehmann
// shift of the pooled per-step samples with its confidence interval from the U test. A
// difference is claimed when the interval excludes zero and the shift reaches the minimum
// effect; SAME when the interval lies within it. Steps of one run vary less than runs of other
// days, so when the sides come from different sweeps a verdict also needs the baseline's
// run-to-run spread: three runs or more, and a candidate median outside their range of medians.

MetricResult compare_speed(Metric metric, const Side& b, const Side& c, bool across_sweeps,
                           const ComparePolicy& policy) {
  const bool time = metric != Metric::tokens_per_s;
  const bool kernel = metric == Metric::kernel_ms;
  const std::vector<double>& bs = time ? b.step_ms : b.tokens_per_s;
  const std::vector<double>& cs = time ? c.step_ms : c.tokens_per_s;
  const std::vector<double>& b_medians = time ? b.run_median_ms : b.run_median_tokens_per_s;
  const std::string_view format = kernel ? "{:.4f}" : time ? "{:.2f}" : "{:.0f}";
  const std::string_view unit = kernel ? "samples" : "steps";
  auto figure = [&](const std::vector<double>& samples, size_t runs) {
    const std::string who =
        kernel ? fmt::format("{} result{}", runs, runs == 1 ? "" : "s") : runs_text(runs);
    if (samples.empty()) return fmt::format("no measured {}, {}", unit, who);
    const stats::Summary s = stats::summarize(samples);
    return fmt::format("{} ({}–{}), {}, {} {}", fmt::format(fmt::runtime(format), s.median),
                       fmt::format(fmt::runtime(format), s.p10),
                       fmt::format(fmt::runtime(format), s.p90), who, s.count, unit);
  };
  MetricResult r;
  r.metric = metric;
  r.baseline = figure(bs, b.ok_count);
  r.candidate = figure(cs, c.ok_count);
  const auto min = static_cast<size_t>(policy.min_samples);
  if (bs.size() < min || cs.size() < min) {
    r.verdict = Verdict::unsure;
    r.change = "—";
    r.reason = fmt::format("too few measured {} ({} and {}; {} needed on each side)", unit,
                           bs.size(), cs.size(), policy.min_samples);
    return r;
  }
  const stats::ShiftEstimate e = stats::estimate_shift(bs, cs, policy.alpha);
  const double base = stats::summarize(bs).median;
  const double rel = e.shift / base;
  const double low = e.shift_low / base;
  const double high = e.shift_high / base;
  // The speedup by the rule every report uses, from the step times whichever metric this is.
  const Speedup ratio = speedup(stats::summarize(b.step_ms), stats::summarize(c.step_ms));
  r.change = fmt::format("{} ({:.0f} % CI {} … {}; p = {:.2g}); speedup {}", percent(rel),
                         100.0 * (1.0 - policy.alpha), percent(low), percent(high), e.p_value,
                         speedup_range_text(ratio));
  // Worse means slower: a longer step, or fewer tokens per second.
  const double worse = time ? rel : -rel;
  const bool interval_excludes_zero = low > 0.0 || high < 0.0;
  const double effect = policy.min_effect;
  if (across_sweeps && b_medians.size() < kRunsForSpread) {
    r.verdict = Verdict::unsure;
    r.reason = fmt::format(
        "the baseline holds {} from other sweeps; their run-to-run spread needs {} or more "
        "(e.g. nightly:N with N ≥ {}, or sweep:ID,ID,ID)",
        runs_text(b_medians.size()), kRunsForSpread, kRunsForSpread);
    return r;
  }
  if (interval_excludes_zero && std::abs(rel) >= effect) {
    const double candidate_median = stats::summarize(cs).median;
    // Across sweeps, nights vary more than the steps of one night: a candidate median inside the
    // baseline nights' prediction interval is what one more unchanged night looks like.
    if (across_sweeps) {
      const std::optional<stats::Interval> pi = stats::prediction_interval(b_medians, policy.alpha);
      if (pi && candidate_median >= pi->low && candidate_median <= pi->high) {
        // SAME only where that interval is narrow enough to say so; nights that spread more
        // leave the question open.
        const double half_width = (pi->high - pi->low) / 2.0 / base;
        const bool narrow = half_width <= kSpreadForSame * effect;
        r.verdict = narrow ? Verdict::same : Verdict::unsure;
        r.reason = fmt::format(
            "{}: the candidate's median lies inside the {:.0f} % prediction interval of the "
            "baseline's run medians ({}–{}, ±{}{})",
            narrow ? "within the night-to-night spread" : "the nights spread too much to tell",
            100.0 * (1.0 - policy.alpha), fmt::format(fmt::runtime(format), pi->low),
            fmt::format(fmt::runtime(format), pi->high), magnitude(half_width),
            narrow ? ""
                   : fmt::format("; SAME needs ±{} or less", magnitude(kSpreadForSame * effect)));
        return r;
      }
    }
    const auto [lo_run, hi_run] = std::minmax_element(b_medians.begin(), b_medians.end());
    if (across_sweeps && candidate_median >= *lo_run && candidate_median <= *hi_run) {
      r.verdict = Verdict::unsure;
      r.reason = fmt::format(
          "the candidate's median lies within the range of the baseline's run medians ({})",
          range_text(b_medians, format));
      return r;
    }
    // The report calls a difference inside the p10–p90 spreads "same"; compare does not call it
    // faster or slower either.
    const SpeedVerdict agrees = worse > 0 ? SpeedVerdict::slower : SpeedVerdict::faster;
    if (ratio.verdict != agrees) {
      r.verdict = Verdict::unsure;
      r.reason = fmt::format(
          "the shift is significant, but the speedup {} lies inside the p10–p90 spreads",
          speedup_range_text(ratio));
      return r;
    }
    r.verdict = worse > 0 ? Verdict::regressed : Verdict::improved;
    r.reason = fmt::format(
        "the interval excludes 0, the shift exceeds ±{} and the p10–p90 spreads do not overlap",
        magnitude(effect));
  } else if (low >= -effect && high <= effect) {
    r.verdict = Verdict::same;
    r.reason = fmt::format("the interval lies within ±{}", magnitude(effect));
  } else {
    r.verdict = Verdict::unsure;
    r.reason =
        fmt::format("the interval neither excludes 0 with a shift beyond ±{0} nor lies within ±{0}",
                    magnitude(effect));
  }
  return r;
}

}  // namespace detail

namespace {

using detail::compare_speed;
using detail::name_first_bad_night;

std::optional<MetricResult> compare_memory(const Side& b, const Side& c,
                                           const ComparePolicy& policy) {
  if (b.peaks.empty() && c.peaks.empty()) return std::nullopt;  // CPU runs record none
  MetricResult r;
  r.metric = Metric::peak_mem_gib;
  auto figure = [](const std::vector<double>& peaks) {
    if (peaks.empty()) return std::string("not recorded");
    if (peaks.size() == 1) return fmt::format("{:.3f}", peaks.front());
    return fmt::format("{} over {}", range_text(peaks, "{:.3f}"), runs_text(peaks.size()));
  };
  r.baseline = figure(b.peaks);
  r.candidate = figure(c.peaks);
  if (b.peaks.empty() || c.peaks.empty()) {
    r.verdict = Verdict::unsure;
    r.change = "—";
    r.reason = "peak memory is recorded on one side only";
    return r;
  }
  const auto [b_low, b_high] = std::minmax_element(b.peaks.begin(), b.peaks.end());
  const double candidate = *std::max_element(c.peaks.begin(), c.peaks.end());
  const double tol = policy.memory_tolerance;
  const double rel = candidate / *b_high - 1.0;
  r.change = fmt::format("{} (tolerance ±{})", percent(rel), magnitude(tol));
  if (candidate > *b_high * (1.0 + tol)) {
    r.verdict = Verdict::regressed;
    r.reason = "above the baseline's highest peak by more than the tolerance";
  } else if (candidate < *b_low * (1.0 - tol)) {
    r.verdict = Verdict::improved;
    r.reason = "below the baseline's lowest peak by more than the tolerance";
  } else {
    r.verdict = Verdict::same;
    r.reason = "within the tolerance of the baseline's peaks";
  }
  return r;
}

MetricResult compare_loss(const Side& b, const Side& c, const ComparePolicy& policy) {
  MetricResult r;
  r.metric = Metric::final_loss;
  r.change = "—";
  if (b.final_losses.empty() || c.final_losses.empty()) {
    r.baseline = b.final_losses.empty() ? "—" : fmt::format("{:.4f}", b.final_losses[0].second);
    r.candidate = c.final_losses.empty() ? "—" : fmt::format("{:.4f}", c.final_losses[0].second);
    r.verdict = Verdict::unsure;
    r.reason = "no loss recorded on one side";
    return r;
  }
  // Only runs trained alike are compared: same steps, seed, sizes, learning rate and data.
  const store::RunRecord& candidate_run = *c.final_losses.front().first;
  const TrainingSignature want = training_signature(candidate_run);
  std::vector<double> base;
  for (const auto& [run, loss] : b.final_losses) {
    if (training_signature(*run) == want) base.push_back(loss);
  }
  double cand = 0.0;
  for (const auto& entry : c.final_losses)
    cand += entry.second;
  cand /= static_cast<double>(c.final_losses.size());
  r.candidate = std::isfinite(cand) ? fmt::format("{:.4f}", cand) : "non-finite";
  if (!std::isfinite(cand)) {
    r.baseline = fmt::format("{:.4f}", b.final_losses[0].second);
    r.verdict = Verdict::regressed;
    r.reason = "the candidate's loss is not finite";
    return r;
  }
  if (base.empty()) {
    r.baseline = fmt::format("{:.4f}", b.final_losses[0].second);
    r.verdict = Verdict::unsure;
    r.reason = fmt::format("trained differently: baseline {}; candidate {}",
                           training_signature(*b.final_losses[0].first).text, want.text);
    return r;
  }
  double mean = 0.0;
  for (double v : base)
    mean += v;
  mean /= static_cast<double>(base.size());
  r.baseline = base.size() == 1 ? fmt::format("{:.4f}", mean)
                                : fmt::format("{:.4f} (mean; {} over {})", mean,
                                              range_text(base, "{:.4f}"), runs_text(base.size()));
  if (!std::isfinite(mean) || mean == 0.0) {
    r.verdict = Verdict::unsure;
    r.reason = "the baseline's loss is not finite";
    return r;
  }
  // The band widens to the baseline's own run-to-run range where that is wider, and, from three
  // baseline runs on, to where one more run falls with probability 1 − alpha: training on a GPU
  // is not bit-reproducible (atomics in attention's and the embedding's backward), and an
  // unchanged night's loss moves by more than 1 % after a few hundred steps.
  const auto [lo, hi] = std::minmax_element(base.begin(), base.end());
  double band = std::max(policy.loss_band, (*hi - *lo) / mean);
  if (base.size() >= detail::kRunsForSpread) {
    if (const std::optional<stats::Interval> pi =
            stats::prediction_interval(base, policy.loss_alpha)) {
      band = std::max(band, (pi->high - mean) / mean);
    }
  }
  const double rel = (cand - mean) / mean;
  r.change = fmt::format("{} (parity band ±{})", percent(rel, 2), magnitude(band, 2));
  if (rel > band) {
    r.verdict = Verdict::regressed;
    r.reason = "above the parity band";
  } else if (rel < -band) {
    r.verdict = Verdict::improved;
    r.reason = "below the parity band";
  } else {
    r.verdict = Verdict::same;
    r.reason = "within the parity band";
  }
  return r;
}

std::optional<MetricResult> compare_status(const Side& b, const Side& c) {
  auto failures = [](const Side& side) {
    std::string text;
    for (const store::RunRecord& run : side.runs) {
      if (run.status == store::RunStatus::ok) continue;
      text += fmt::format("{}run {} {}{}", text.empty() ? "" : "; ", run.id,
                          store::to_string(run.status), run.error ? ": " + *run.error : "");
    }
    return text;
  };
  const std::string b_fail = failures(b);
  const std::string c_fail = failures(c);
  if (b_fail.empty() && c_fail.empty()) return std::nullopt;
  MetricResult r;
  r.metric = Metric::status;
  r.baseline = b_fail.empty() ? "ok" : b_fail;
  r.candidate = c_fail.empty() ? "ok" : c_fail;
  r.change = "—";
  if (!c_fail.empty()) {
    r.verdict = Verdict::regressed;
    r.reason = "a candidate run did not end ok";
  } else {
    r.verdict = Verdict::improved;
    r.reason = "every candidate run ended ok where a baseline run did not";
  }
  return r;
}

std::vector<int64_t> ids(const std::vector<store::RunRecord>& runs) {
  std::vector<int64_t> out;
  for (const store::RunRecord& r : runs)
    out.push_back(r.id);
  return out;
}

// A speed verdict from runs that shared the machine with other work says as much about that
// work as about the change: it is UNSURE, naming the runs.
void decline_under_contention(GroupResult& g, const Side& b, const Side& c) {
  std::vector<std::string> contended;
  for (const Side* side : {&b, &c}) {
    for (const store::RunRecord* run : side->ok) {
      if (run->contention)
        contended.push_back(fmt::format("run {}: {}", run->id, *run->contention));
    }
  }
  if (contended.empty()) return;
  std::string runs;
  for (const std::string& text : contended)
    runs += (runs.empty() ? "" : "; ") + text;
  for (MetricResult& m : g.metrics) {
    if (!is_speed(m.metric) || (m.verdict != Verdict::regressed && m.verdict != Verdict::improved))
      continue;
    m.reason = fmt::format(
        "it would read {}, but {} measured under contention ({}), and that evidence alone does "
        "not decide it",
        verdict_word(m.metric, m.verdict), contended.size() == 1 ? "a run was" : "runs were", runs);
    m.verdict = Verdict::unsure;
  }
}

GroupResult compare_group(const store::Store& store, std::vector<store::RunRecord> baseline,
                          std::vector<store::RunRecord> candidate, const ComparePolicy& policy,
                          std::vector<std::string>& notes) {
  GroupResult g;
  g.workload = candidate.front().workload;
  g.recipe = candidate.front().recipe;
  // Two single runs of one workload may differ in recipe (or, allowed, in workload); say so.
  if (baseline.front().workload != g.workload) {
    g.workload = fmt::format("{} → {}", baseline.front().workload, g.workload);
  }
  if (baseline.front().recipe != g.recipe) {
    g.recipe = fmt::format("{} → {}", baseline.front().recipe, g.recipe);
  }
  g.baseline_runs = ids(baseline);
  g.candidate_runs = ids(candidate);
  const Side b = collect(store, std::move(baseline));
  const Side c = collect(store, std::move(candidate));

  if (std::optional<MetricResult> status = compare_status(b, c)) g.metrics.push_back(*status);
  if (c.ok.empty()) {
    // Nothing measured to compare beyond the failure; across nights, name the night it began.
    bool other_nights = true;
    for (const store::RunRecord& br : b.runs) {
      for (const store::RunRecord& cr : c.runs)
        other_nights = other_nights && br.sweep_id != cr.sweep_id;
    }
    for (MetricResult& m : g.metrics) {
      if (other_nights && m.verdict == Verdict::regressed) {
        m.culprit = name_first_bad_night(b.nights_failed, c.nights_failed);
      }
    }
    return g;
  }

  // Step time compares only equal steps; tokens/s compares any.
  auto tokens = [](const Side& side) {
    return side.ok.empty() ? int64_t{0} : side.ok.front()->tokens_per_step;
  };
  // Runs of one sweep share its interleaving and machine state; runs of other sweeps do not.
  bool across_sweeps = true;
  for (const store::RunRecord* cr : c.ok) {
    for (const store::RunRecord* br : b.ok)
      across_sweeps = across_sweeps && br->sweep_id != cr->sweep_id;
  }
  MetricResult step = compare_speed(Metric::step_ms, b, c, across_sweeps, policy);
  if (!b.ok.empty() && tokens(b) != tokens(c)) {
    step.verdict = Verdict::unsure;
    step.reason = fmt::format("steps of different sizes ({} and {} tokens); compare tokens/s",
                              tokens(b), tokens(c));
  }
  g.metrics.push_back(step);
  g.metrics.push_back(compare_speed(Metric::tokens_per_s, b, c, across_sweeps, policy));
  if (std::optional<MetricResult> memory = compare_memory(b, c, policy)) {
    g.metrics.push_back(*memory);
  }
  // Only the model level trains on a loss (run_final_loss): where neither side has one there is
  // nothing to judge, and no line for it.
  if (!b.final_losses.empty() || !c.final_losses.empty()) {
    g.metrics.push_back(compare_loss(b, c, policy));
  }

  // The tracked ratios: each side's runs against the BF16 run of their own sweeps, one value a
  // night. Only across sweeps (within one sweep the BF16 run is the other side already).
  std::map<Metric, std::pair<std::vector<Night>, std::vector<Night>>> ratio_nights;
  if (across_sweeps && !b.ok.empty() && g.recipe == b.ok.front()->recipe && g.recipe != "bf16") {
    for (const auto& [metric, night_of] :
         {std::pair{Metric::speedup_vs_bf16, &detail::speedup_night},
          std::pair{Metric::loss_gap_vs_bf16, &detail::loss_gap_night}}) {
      auto& [bn, cn] = ratio_nights[metric];
      for (const store::RunRecord* run : b.ok)
        if (std::optional<Night> n = night_of(store, *run)) bn.push_back(*n);
      for (const store::RunRecord* run : c.ok)
        if (std::optional<Night> n = night_of(store, *run)) cn.push_back(*n);
      if (!bn.empty() && !cn.empty()) {
        g.metrics.push_back(detail::compare_ratio(metric, bn, cn, policy));
      }
    }
  }

  decline_under_contention(g, b, c);

  // Across nights, a regression names the night it began.
  if (across_sweeps) {
    for (MetricResult& m : g.metrics) {
      if (m.verdict != Verdict::regressed) continue;
      const std::vector<Night>* bn = nullptr;
      const std::vector<Night>* cn = nullptr;
      switch (m.metric) {
        case Metric::status:
          bn = &b.nights_failed, cn = &c.nights_failed;
          break;
        case Metric::step_ms:
        case Metric::kernel_ms:
          bn = &b.nights_ms, cn = &c.nights_ms;
          break;
        case Metric::tokens_per_s:
          bn = &b.nights_tokens_per_s, cn = &c.nights_tokens_per_s;
          break;
        case Metric::peak_mem_gib:
          bn = &b.nights_peak, cn = &c.nights_peak;
          break;
        case Metric::final_loss:
          bn = &b.nights_loss, cn = &c.nights_loss;
          break;
        case Metric::speedup_vs_bf16:
        case Metric::loss_gap_vs_bf16:
          bn = &ratio_nights[m.metric].first, cn = &ratio_nights[m.metric].second;
          break;
      }
      m.culprit = name_first_bad_night(*bn, *cn);
    }
  }

  // Another host of the same GPU model is alike enough to judge, but say so.
  if (!b.ok.empty() && b.ok.front()->provenance.host != c.ok.front()->provenance.host) {
    notes.push_back(fmt::format("{} · {}: measured on host {} against {}", g.workload, g.recipe,
                                c.ok.front()->provenance.host, b.ok.front()->provenance.host));
  }
  return g;
}

}  // namespace

std::string_view to_string(Metric metric) {
  switch (metric) {
    case Metric::status:
      return "run status";
    case Metric::step_ms:
      return "median step_ms";
    case Metric::tokens_per_s:
      return "tokens/s";
    case Metric::peak_mem_gib:
      return "peak_mem_gib";
    case Metric::final_loss:
      return "final loss";
    case Metric::kernel_ms:
      return "median ms per call";
    case Metric::speedup_vs_bf16:
      return "speedup over bf16";
    case Metric::loss_gap_vs_bf16:
      return "loss gap to bf16";
  }
  return "?";
}

bool is_speed(Metric metric) {
  return metric == Metric::step_ms || metric == Metric::tokens_per_s ||
         metric == Metric::kernel_ms || metric == Metric::speedup_vs_bf16;
}

std::string_view verdict_word(Metric metric, Verdict verdict) {
  const bool speed = is_speed(metric);
  switch (verdict) {
    case Verdict::improved:
      return speed ? "FASTER" : "BETTER";
    case Verdict::regressed:
      return speed ? "SLOWER" : "WORSE";
    case Verdict::same:
      return "SAME";
    case Verdict::unsure:
      return "UNSURE";
  }
  return "?";
}

int Comparison::regressions() const {
  int n = 0;
  for (const GroupResult& g : groups) {
    for (const MetricResult& m : g.metrics)
      n += m.verdict == Verdict::regressed;
  }
  return n;
}

int Comparison::unsure() const {
  int n = 0;
  for (const GroupResult& g : groups) {
    for (const MetricResult& m : g.metrics)
      n += m.verdict == Verdict::unsure;
  }
  return n;
}

int Comparison::exit_code() const {
  if (regressions() > 0) return 1;
  if (groups.empty() || unsure() > 0) return 3;
  return 0;
}

Comparison compare_runs(const store::Store& store, const SelectedPair& runs,
                        const std::string& baseline_spec, const std::string& candidate_spec,
                        const ComparePolicy& policy) {
  Comparison out;
  out.baseline_spec = baseline_spec;
  out.candidate_spec = candidate_spec;
  out.policy = policy;
  out.notes = runs.notes;
  // The kernel suite's cases follow the runs' groups.
  std::vector<GroupResult> kernel_groups =
      detail::compare_kernel_results(store, runs.kernel_baseline, runs.kernel_candidate, policy,
                                     baseline_spec, candidate_spec, out.notes, out.warnings);
  auto finish = [&] {
    for (GroupResult& g : kernel_groups)
      out.groups.push_back(std::move(g));
    return std::move(out);
  };
  const bool kernels_only = runs.baseline.empty() && runs.candidate.empty() &&
                            !(runs.kernel_baseline.empty() && runs.kernel_candidate.empty());
  if (kernels_only) return finish();
  if (runs.baseline.empty()) {
    out.notes.push_back(
        fmt::format("{} selects no runs: nothing to compare against", baseline_spec));
  }
  if (runs.candidate.empty()) {
    out.notes.push_back(fmt::format("{} selects no runs: nothing to compare", candidate_spec));
  }
  if (runs.baseline.empty() || runs.candidate.empty()) return finish();

  if (runs.baseline.size() == 1 && runs.candidate.size() == 1) {
    check_alike(runs.baseline, runs.candidate, policy, out.warnings);
    out.groups.push_back(compare_group(store, runs.baseline, runs.candidate, policy, out.notes));
    return finish();
  }
  using Key = std::pair<std::string, std::string>;
  std::map<Key, std::pair<std::vector<store::RunRecord>, std::vector<store::RunRecord>>> groups;
  for (const store::RunRecord& r : runs.baseline)
    groups[{r.workload, r.recipe}].first.push_back(r);
  for (const store::RunRecord& r : runs.candidate)
    groups[{r.workload, r.recipe}].second.push_back(r);
  for (auto& [key, sides] : groups) {
    if (sides.first.empty() || sides.second.empty()) {
      out.notes.push_back(fmt::format("{} · {}: only in {}, not compared", key.first, key.second,
                                      sides.first.empty() ? candidate_spec : baseline_spec));
      continue;
    }
    check_alike(sides.first, sides.second, policy, out.warnings);
    out.groups.push_back(
        compare_group(store, std::move(sides.first), std::move(sides.second), policy, out.notes));
  }
  return finish();
}

}  // namespace lpbench::reports
