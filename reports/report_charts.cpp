#include "reports/report_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/stats/stats.h"

namespace lpbench::reports {

namespace {

bool several_workloads(const SweepReport& report) {
  std::set<std::string> workloads;
  for (const RunSummary& s : report.runs)
    workloads.insert(s.run.workload);
  return workloads.size() > 1;
}

// A series' name: the recipe, with the workload where a sweep has several.
std::string label(const store::RunRecord& run, bool with_workload) {
  return with_workload ? fmt::format("{} · {}", run.workload, run.recipe) : run.recipe;
}

const RunCurves* bf16_of(const std::vector<RunCurves>& runs, const store::RunRecord& run) {
  for (const RunCurves& c : runs) {
    if (c.summary->run.recipe == "bf16" && c.summary->run.workload == run.workload) return &c;
  }
  return nullptr;
}

// A centred moving average over `window` points (odd), shorter at the ends.
std::vector<ChartPoint> smoothed(const std::vector<ChartPoint>& points, size_t window) {
  std::vector<ChartPoint> out;
  const size_t half = window / 2;
  for (size_t i = 0; i < points.size(); ++i) {
    const size_t from = i >= half ? i - half : 0;
    const size_t to = std::min(points.size(), i + half + 1);
    double sum = 0.0;
    size_t n = 0;
    for (size_t j = from; j < to; ++j) {
      if (!std::isfinite(points[j].y)) continue;
      sum += points[j].y;
      ++n;
    }
    ChartPoint p = points[i];
    p.y = n ? sum / static_cast<double>(n) : NAN;
    out.push_back(p);
  }
  return out;
}

bool any_cpu(const SweepReport& report) {
  return std::any_of(report.runs.begin(), report.runs.end(),
                     [](const RunSummary& s) { return s.run.device == "cpu"; });
}

}  // namespace

std::vector<RunCurves> load_curves(const store::Store& store, const SweepReport& report) {
  std::vector<RunCurves> out;
  for (const RunSummary& s : report.runs)
    out.push_back({&s, store.steps(s.run.id), store.evals(s.run.id)});
  return out;
}

std::optional<Figure> loss_figure(const SweepReport& report, const std::vector<RunCurves>& runs) {
  const bool with_workload = several_workloads(report);
  Figure f;
  f.file = fmt::format("sweep-{}-loss.svg", report.sweep.id);
  f.chart.title = fmt::format("Loss per step, sweep {}", report.sweep.id);
  f.chart.x_label = "step";
  f.chart.y_label = "loss";
  bool any_eval = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    const store::RunRecord& run = runs[i].summary->run;
    ChartSeries train{
        label(run, with_workload), ChartSeries::Style::lines, static_cast<int>(i), {}};
    for (const store::StepRecord& s : runs[i].steps)
      train.points.push_back({static_cast<double>(s.step), s.loss, 0.0, 0.0, {}});
    f.chart.series.push_back(std::move(train));
    if (runs[i].evals.empty()) continue;
    any_eval = true;
    ChartSeries eval{label(run, with_workload) + " (validation)",
                     ChartSeries::Style::points,
                     static_cast<int>(i),
                     {}};
    for (const store::EvalRecord& e : runs[i].evals)
      eval.points.push_back({static_cast<double>(e.step), e.val_loss, 0.0, 0.0, {}});
    f.chart.series.push_back(std::move(eval));
  }
  if (!has_data(f.chart)) return std::nullopt;
  f.caption =
      fmt::format("Training loss of every recipe per step, from the same seed and data{}.",
                  any_eval ? "; markers: validation loss" : " (no validation loss was recorded)");
  return f;
}

std::optional<Figure> loss_gap_figure(const SweepReport& report,
                                      const std::vector<RunCurves>& runs) {
  const bool with_workload = several_workloads(report);
  Figure f;
  f.file = fmt::format("sweep-{}-loss-gap.svg", report.sweep.id);
  f.chart.title = fmt::format("Loss gap to bf16 per step, sweep {}", report.sweep.id);
  f.chart.x_label = "step";
  f.chart.y_label = "(loss − bf16 loss) / bf16 loss, %";
  f.chart.reference_y = 0.0;
  f.chart.reference_title = "bf16";
  for (size_t i = 0; i < runs.size(); ++i) {
    const store::RunRecord& run = runs[i].summary->run;
    if (run.recipe == "bf16") continue;
    const RunCurves* base = bf16_of(runs, run);
    if (!base) continue;
    std::map<int64_t, double> base_loss;
    for (const store::StepRecord& s : base->steps)
      base_loss[s.step] = s.loss;
    std::vector<ChartPoint> gap;
    for (const store::StepRecord& s : runs[i].steps) {
      const auto b = base_loss.find(s.step);
      if (b == base_loss.end() || !(b->second != 0.0)) continue;
      gap.push_back(
          {static_cast<double>(s.step), 100.0 * (s.loss - b->second) / b->second, 0.0, 0.0, {}});
    }
    // About 5 % of the steps, odd so that the average is centred; short runs are drawn raw.
    const size_t window = std::max<size_t>(1, gap.size() / 20) | 1;
    const std::string name = label(run, with_workload);
    if (window < 3) {
      f.chart.series.push_back({name, ChartSeries::Style::lines, static_cast<int>(i), gap});
      continue;
    }
    f.chart.series.push_back(
        {name + " (per step)", ChartSeries::Style::thin_lines, static_cast<int>(i), gap});
    f.chart.series.push_back({fmt::format("{} (centred mean of {} steps)", name, window),
                              ChartSeries::Style::lines, static_cast<int>(i),
                              smoothed(gap, window)});
  }
  if (!has_data(f.chart)) return std::nullopt;
  f.caption =
      "The relative loss gap to the bf16 run of the same workload at each step, and its centred "
      "moving average. The same seed and data make the curves comparable step by step; the "
      "scatter of the raw gap is the noise a difference must exceed.";
  return f;
}

std::optional<Figure> speedup_figure(const SweepReport& report) {
  Figure f;
  f.file = fmt::format("sweep-{}-speedup.svg", report.sweep.id);
  f.chart.title = fmt::format("Speedup over bf16, sweep {}", report.sweep.id);
  f.chart.x_label = "";
  f.chart.y_label = "bf16 step time / recipe step time (log scale)";
  f.chart.x_axis = Chart::XAxis::categories;
  f.chart.log_y = true;
  f.chart.reference_y = 1.0;
  f.chart.reference_title = "1× = bf16";
  ChartSeries series{
      "median, with the range the p10–p90 spreads allow", ChartSeries::Style::error_bars, -1, {}};
  for (const RunSummary& s : report.runs) {
    if (s.run.recipe == "bf16" || !s.speedup) continue;
    const double x = static_cast<double>(f.chart.categories.size());
    f.chart.categories.push_back(label(s.run, true));
    series.points.push_back({x, s.speedup->ratio, s.speedup->low, s.speedup->high, {}});
  }
  // The reference line at 1× stays inside the frame, with room around the bars.
  double low = 1.0;
  double high = 1.0;
  for (const ChartPoint& p : series.points) {
    if (std::isfinite(p.low) && p.low > 0.0) low = std::min(low, p.low);
    if (std::isfinite(p.high)) high = std::max(high, p.high);
  }
  f.chart.y_range = std::make_pair(low / 1.25, high * 1.25);
  f.chart.series.push_back(std::move(series));
  if (!has_data(f.chart)) return std::nullopt;
  f.caption =
      "Marker: bf16's median step time over the recipe's. Bar: from bf16's p10 over the recipe's "
      "p90 to bf16's p90 over the recipe's p10; a bar that crosses 1× is no claimed speedup "
      "(the table says \"same\").";
  if (any_cpu(report)) {
    f.caption += " CPU runs are timed with the host clock; emulated INT8 times are no GPU figure.";
  }
  return f;
}

std::optional<Figure> memory_figure(const SweepReport& report, const std::vector<RunCurves>& runs) {
  Figure f;
  f.file = fmt::format("sweep-{}-memory.svg", report.sweep.id);
  f.chart.title = fmt::format("Peak memory, sweep {}", report.sweep.id);
  f.chart.y_label = "peak_mem_gib";
  f.chart.x_axis = Chart::XAxis::categories;
  ChartSeries series{"peak over the measured steps; bar: p10–p90 of the per-step peaks",
                     ChartSeries::Style::error_bars,
                     -1,
                     {}};
  for (const RunCurves& c : runs) {
    std::vector<double> peaks;
    for (const store::StepRecord& s : c.steps) {
      if (!s.warmup && s.peak_mem_gib) peaks.push_back(*s.peak_mem_gib);
    }
    if (peaks.empty()) continue;
    const stats::Summary p = stats::summarize(peaks);
    const double x = static_cast<double>(f.chart.categories.size());
    f.chart.categories.push_back(label(c.summary->run, true));
    series.points.push_back({x, p.max, p.p10, p.p90, {}});
  }
  f.chart.series.push_back(std::move(series));
  if (!has_data(f.chart)) return std::nullopt;
  f.caption =
      "The CUDA caching allocator's peak allocated memory of each run over its measured steps "
      "(the table's figure), with the p10–p90 of the per-step peaks.";
  return f;
}

std::vector<NightlySweep> load_nightly(const store::Store& store) {
  store::SweepQuery query;
  query.label = "nightly";
  std::vector<NightlySweep> out;
  for (const store::SweepRecord& sweep : store.sweeps(query)) {
    NightlySweep n{sweep, {}};
    for (const store::RunRecord& run : store.runs(sweep.id))
      n.runs.push_back(summarize_run(run, store.steps(run.id)));
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<Figure> nightly_figures(const std::vector<NightlySweep>& nightly) {
  std::set<std::string> hosts;
  for (const NightlySweep& n : nightly)
    hosts.insert(n.sweep.host);
  // One series per workload and recipe (and host, where several hosts run nightly).
  std::map<std::string, std::pair<ChartSeries, ChartSeries>> series;
  for (const NightlySweep& n : nightly) {
    for (const RunSummary& s : n.runs) {
      if (s.run.status != store::RunStatus::ok || s.step_ms.count == 0) continue;
      std::string key = fmt::format("{} · {}", s.run.workload, s.run.recipe);
      if (hosts.size() > 1) key += " @ " + n.sweep.host;
      auto& [time, rate] = series[key];
      time.title = rate.title = key;
      time.style = rate.style = ChartSeries::Style::error_lines;
      time.points.push_back(
          {0.0, s.step_ms.median, s.step_ms.p10, s.step_ms.p90, n.sweep.started_at});
      const auto tokens = static_cast<double>(s.run.tokens_per_step);
      rate.points.push_back({0.0, tokens / (s.step_ms.median / 1000.0),
                             tokens / (s.step_ms.p90 / 1000.0), tokens / (s.step_ms.p10 / 1000.0),
                             n.sweep.started_at});
    }
  }
  if (series.empty()) return {};
  Figure time;
  time.file = "nightly-step-ms.svg";
  time.chart.title = "Nightly: median step time";
  time.chart.x_label = "sweep start (UTC)";
  time.chart.y_label = "step_ms";
  time.chart.x_axis = Chart::XAxis::time;
  time.caption =
      "Median step time of every nightly run, per workload and recipe, with its p10–p90 as a "
      "bar. A step out of the bars of the nights before is what `lpbench compare` checks.";
  Figure rate = time;
  rate.file = "nightly-tokens-per-s.svg";
  rate.chart.title = "Nightly: tokens per second";
  rate.chart.y_label = "tokens/s";
  rate.caption =
      "Tokens per second of every nightly run (tokens per step over the median step time), with "
      "the range its p10–p90 step times give.";
  for (auto& [key, pair] : series) {
    time.chart.series.push_back(std::move(pair.first));
    rate.chart.series.push_back(std::move(pair.second));
  }
  return {time, rate};
}

}  // namespace lpbench::reports
