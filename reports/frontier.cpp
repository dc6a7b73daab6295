#include "reports/frontier.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "base/errors.h"
#include "reports/run_summary.h"
#include "reports/text_table.h"

namespace lpbench::reports {

namespace {

bool gpu_layer_bf16(const store::RunRecord& run) {
  return run.level == "layer" && run.recipe == "bf16" && run.device != "cpu" &&
         run.status == store::RunStatus::ok;
}

// The layer workload of a sweep to take speedups from: llama2-7b's where it ran, else the first.
std::optional<store::RunRecord> speed_baseline(const std::vector<store::RunRecord>& runs) {
  std::optional<store::RunRecord> first;
  for (const store::RunRecord& run : runs) {
    if (!gpu_layer_bf16(run)) continue;
    if (run.workload == "layer:llama2-7b") return run;
    if (!first) first = run;
  }
  return first;
}

// A sweep's speed source: its baseline run, the summaries of that workload's runs, and why their
// times are not comparable as they are (empty: they are; the flags the sweep's own table marks
// ‡, § and ¶).
struct SpeedCandidate {
  store::RunRecord baseline;
  std::vector<RunSummary> runs;
  std::string flag;
};

std::optional<SpeedCandidate> speed_candidate(const store::Store& store, int64_t sweep) {
  std::vector<store::RunRecord> all = store.runs(sweep);
  std::optional<store::RunRecord> baseline = speed_baseline(all);
  if (!baseline) return std::nullopt;
  SpeedCandidate c{*baseline, {}, ""};
  for (const store::RunRecord& run : all) {
    if (run.workload != baseline->workload) continue;
    RunSummary s = summarize_stored_run(store, run);
    if (c.flag.empty()) {
      if (run.clock_fell.value_or(false)) {
        c.flag = fmt::format("the SM clock fell during run {}'s ({}) measured steps", run.id,
                             run.recipe);
      } else if (run.contention) {
        c.flag = fmt::format("run {} ({}) shared the GPU: {}", run.id, run.recipe, *run.contention);
      } else if (s.steps_with_allocation_retries > 0) {
        c.flag = fmt::format(
            "the caching allocator released its cache to retry an allocation in {} of run {}'s "
            "({}) {} measured steps",
            s.steps_with_allocation_retries, run.id, run.recipe, s.step_ms.count);
      }
    }
    c.runs.push_back(std::move(s));
  }
  compare_with_bf16(c.runs);
  return c;
}

bool at_parity(const RecipeVerdict& v) {
  return v.verdict == Parity::parity || v.verdict == Parity::baseline;
}

}  // namespace

Frontier build_frontier(const store::Store& store, const std::vector<RecipeVerdict>& verdicts,
                        std::optional<int64_t> speed_sweep) {
  Frontier out;
  std::optional<SpeedCandidate> source;
  if (speed_sweep) {
    if (!store.sweep(*speed_sweep)) {
      throw InputError(fmt::format(
          "--speed-from {}: there is no sweep {} in this database; `lpbench report` lists them",
          *speed_sweep, *speed_sweep));
    }
    source = speed_candidate(store, *speed_sweep);
    if (!source) {
      throw InputError(fmt::format(
          "--speed-from {}: that sweep has no layer-level bf16 run on a GPU that ended ok; give "
          "a sweep of e.g. `lpbench run --workload layer:llama2-7b --recipes bf16,...` on a GPU",
          *speed_sweep));
    }
  } else {
    // The newest unflagged sweep; the newest flagged one where there is no other.
    const std::vector<store::SweepRecord> sweeps = store.sweeps();
    std::optional<SpeedCandidate> flagged;
    for (auto it = sweeps.rbegin(); it != sweeps.rend() && !source; ++it) {
      std::optional<SpeedCandidate> found = speed_candidate(store, it->id);
      if (!found) continue;
      if (found->flag.empty()) {
        source = std::move(found);
      } else if (!flagged) {
        flagged = std::move(found);
      }
    }
    if (!source) source = std::move(flagged);
    if (!source) {
      out.no_speed =
          "no speedups: this database holds no layer-level bf16 run on a GPU that ended ok; "
          "run the layer on a GPU into it, or name such a sweep with --speed-from";
    }
  }

  std::vector<RunSummary> runs;
  if (source) {
    const store::RunRecord& b = source->baseline;
    out.source =
        SpeedSource{b.sweep_id, b.workload, b.provenance.gpu_name.value_or(b.device), source->flag};
    runs = std::move(source->runs);
  }
  for (const RecipeVerdict& v : verdicts) {
    FrontierRow row;
    row.recipe = v.recipe;
    row.verdict = v;
    for (const RunSummary& r : runs) {
      if (r.run.recipe == v.recipe && r.speedup) row.speedup = r.speedup;
    }
    out.rows.push_back(row);
  }
  // The fastest at parity: the highest speedup among the recipes judged at parity, BF16 aside.
  FrontierRow* fastest = nullptr;
  for (FrontierRow& row : out.rows) {
    if (row.recipe == "bf16" || !at_parity(row.verdict) || !row.speedup) continue;
    if (!fastest || row.speedup->ratio > fastest->speedup->ratio) fastest = &row;
  }
  if (fastest) fastest->fastest_at_parity = true;
  return out;
}

TextTable frontier_table(const Frontier& f) {
  using Align = TextTable::Align;
  TextTable table({{"recipe"},
                   {"speedup over bf16", Align::right},
                   {"val loss gap vs bf16", Align::right},
                   {"seeds", Align::right},
                   {"parity"}});
  for (const FrontierRow& row : f.rows) {
    const RecipeVerdict& v = row.verdict;
    std::string gap = "—";
    if (v.recipe == "bf16") {
      gap = "0 (baseline)";
    } else if (v.gap_pct) {
      gap = fmt::format("{:+.2f} %", *v.gap_pct);
    }
    std::string speed = row.speedup ? speedup_range_text(*row.speedup) : "not measured";
    if (row.recipe == "bf16") speed = "1.00× (baseline)";
    table.add_row({row.fastest_at_parity ? "**" + row.recipe + "** ◆" : row.recipe, speed, gap,
                   std::to_string(v.seeds), std::string(to_string(v.verdict))});
  }
  return table;
}

std::string frontier_source(const Frontier& f) {
  // Said with or without speedups: the sweep table beside this one gives a loss gap too, of the
  // training loss over the last steps, and the two differ.
  constexpr std::string_view kGaps =
      "Loss gaps: the convergence verdict (final validation loss against BF16's, over the seeds; "
      "not the training loss of a sweep's table).";
  if (!f.source) return fmt::format("{}. {}", f.no_speed, kGaps);
  const std::string flag =
      f.source->flagged.empty()
          ? ""
          : fmt::format(" ‡ Those times are not comparable as they are: {}.", f.source->flagged);
  return fmt::format(
      "Speedups: {} in sweep {} on {} (medians, with the range the p10–p90 spreads allow). {}{}",
      f.source->workload, f.source->sweep_id, f.source->gpu, kGaps, flag);
}

std::string frontier_finding(const Frontier& f) {
  const auto fastest = std::find_if(f.rows.begin(), f.rows.end(),
                                    [](const FrontierRow& r) { return r.fastest_at_parity; });
  return fastest == f.rows.end()
             ? "No recipe other than bf16 is both at parity and measured for speed."
             : fmt::format("◆ the fastest recipe at parity: {} ({}).", fastest->recipe,
                           speedup_text(*fastest->speedup));
}

std::string render_frontier(const Frontier& f, const std::string& heading) {
  return fmt::format("{}\n\n{}\n\n{}\n{}\n", heading, frontier_source(f),
                     frontier_table(f).markdown(), frontier_finding(f));
}

Chart frontier_chart(const Frontier& f) {
  Chart chart;
  chart.title =
      f.source ? fmt::format("Speed against accuracy ({} on {})", f.source->workload, f.source->gpu)
               : "Speed against accuracy";
  chart.x_label = "speedup over bf16 (×)";
  chart.y_label = "validation loss gap vs bf16 (%)";
  chart.reference_y = 0.0;
  chart.reference_title = "bf16";
  ChartSeries parity{"at parity", ChartSeries::Style::error_bars, 2, {}};
  ChartSeries outside{"not at parity", ChartSeries::Style::error_bars, 1, {}};
  ChartSeries fastest{"fastest at parity", ChartSeries::Style::points, 3, {}};
  for (const FrontierRow& row : f.rows) {
    // BF16 is the origin of the gaps: 0 %, with its own seeds' band.
    const std::optional<double> gap = row.recipe == "bf16"
                                          ? std::optional<double>(row.verdict.gap_pct.value_or(0.0))
                                          : row.verdict.gap_pct;
    // Runs too short to judge give no point: their gap is not a verdict.
    if (!row.speedup || !gap || row.verdict.verdict == Parity::too_short) continue;
    // The gap of the recipe's lowest and highest seed, against the same BF16 mean.
    double low = *gap, high = *gap;
    if (row.verdict.mean && row.verdict.min && row.verdict.max) {
      const double bf16_mean = *row.verdict.mean / (1.0 + *gap / 100.0);
      low = 100.0 * (*row.verdict.min - bf16_mean) / bf16_mean;
      high = 100.0 * (*row.verdict.max - bf16_mean) / bf16_mean;
    }
    const ChartPoint point{row.speedup->ratio, *gap, low, high, {}, row.recipe};
    (at_parity(row.verdict) ? parity : outside).points.push_back(point);
    if (row.fastest_at_parity) fastest.points.push_back(point);
  }
  chart.series = {parity, outside, fastest};
  return chart;
}

std::vector<TitledFrontier> report_frontiers(const store::Store& store,
                                             const std::vector<store::SweepRecord>& sweeps) {
  // (label, workload) → the sweeps holding its convergence runs, newest first.
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> groups;
  std::set<std::pair<std::string, std::string>> with_bf16;
  for (auto it = sweeps.rbegin(); it != sweeps.rend(); ++it) {
    for (const store::RunRecord& run : store.runs(it->id)) {
      if (run.level != "model" || store.evals(run.id).empty()) continue;
      const std::pair<std::string, std::string> key{it->label.value_or(""), run.workload};
      std::vector<int64_t>& ids = groups[key];
      if (ids.empty() || ids.back() != it->id) ids.push_back(it->id);
      if (run.recipe == "bf16") with_bf16.insert(key);
    }
  }
  std::vector<TitledFrontier> out;
  for (const auto& [key, ids] : groups) {
    if (!with_bf16.count(key)) continue;
    // Each recipe and seed once, from the newest sweep that ran it.
    std::vector<SeedResult> results;
    std::set<std::pair<std::string, uint64_t>> seen;
    size_t used = 0;
    for (const int64_t id : ids) {
      bool any = false;
      std::vector<SeedResult> sweep_results;
      try {
        sweep_results = collect_seed_results(store, {id});
      } catch (const InputError&) {
        continue;  // a sweep of several model workloads: not one convergence comparison
      }
      for (SeedResult& r : sweep_results) {
        if (r.workload != key.second || !seen.insert({r.recipe, r.seed}).second) continue;
        results.push_back(std::move(r));
        any = true;
      }
      used += any;
    }
    if (used == 0) continue;  // its sweeps each ran several model workloads: none judged alone
    const std::vector<RecipeVerdict> verdicts = judge(results, ParityRule{});
    const std::string label = key.first.empty() ? "" : fmt::format(", label '{}'", key.first);
    out.push_back({fmt::format("{} ({} sweep{}{})", key.second, used, used == 1 ? "" : "s", label),
                   build_frontier(store, verdicts, std::nullopt)});
  }
  return out;
}

}  // namespace lpbench::reports
