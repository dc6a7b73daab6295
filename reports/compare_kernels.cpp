#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>

#include "base/errors.h"
#include "base/stats/stats.h"
#include "reports/compare_parts.h"
#include "reports/selection.h"

// The kernel suite in a comparison: one group per case (model, product, shape, recipe, variant),
// judged by the same statistics as a step, on the timed samples each result stored.
namespace lpbench::reports::detail {

namespace {

std::string commit_of(const store::KernelResultRecord& k) {
  const nlohmann::json config = nlohmann::json::parse(k.config_json, nullptr, false);
  return config.is_object() ? config.value("git_commit", std::string()) : std::string();
}

std::string recipe_label(const store::KernelResultRecord& k) {
  return k.variant == "none" ? k.recipe : fmt::format("{} · {}", k.recipe, k.variant);
}

struct KernelSide {
  Side side;
  std::vector<const store::KernelResultRecord*> failed;
  std::vector<int64_t> ids;
};

KernelSide collect(const store::Store& store,
                   const std::vector<const store::KernelResultRecord*>& results) {
  KernelSide out;
  for (const store::KernelResultRecord* k : results) {
    out.ids.push_back(k->id);
    const std::string when = sweep_started_at(store, k->sweep_id);
    const bool failed = k->status == "failed";
    out.side.nights_failed.push_back(
        {k->sweep_id, when, commit_of(*k), failed ? 1.0 : 0.0, 0.0, 0.0});
    if (failed) {
      out.failed.push_back(k);
      continue;
    }
    if (k->status != "ok") continue;
    ++out.side.ok_count;
    const std::vector<double> samples = store.kernel_samples(k->id);
    if (samples.empty()) continue;  // written before schema 6: no samples to test
    const double median = stats::summarize(samples).median;
    out.side.step_ms.insert(out.side.step_ms.end(), samples.begin(), samples.end());
    out.side.run_median_ms.push_back(median);
    out.side.nights_ms.push_back({k->sweep_id, when, commit_of(*k), median, median, median});
  }
  return out;
}

std::string failures_text(const KernelSide& side) {
  std::string text;
  for (const store::KernelResultRecord* k : side.failed)
    text += fmt::format("{}result {} failed{}", text.empty() ? "" : "; ", k->id,
                        k->reason ? ": " + *k->reason : "");
  return text;
}

}  // namespace

std::vector<GroupResult> compare_kernel_results(
    const store::Store& store, const std::vector<store::KernelResultRecord>& baseline,
    const std::vector<store::KernelResultRecord>& candidate, const ComparePolicy& policy,
    const std::string& baseline_spec, const std::string& candidate_spec,
    std::vector<std::string>& notes, std::vector<std::string>& warnings) {
  ComparePolicy kernel_policy = policy;
  kernel_policy.min_effect = policy.kernel_min_effect;
  using Sides = std::pair<std::vector<const store::KernelResultRecord*>,
                          std::vector<const store::KernelResultRecord*>>;
  std::map<std::string, Sides> cases;
  for (const store::KernelResultRecord& k : baseline)
    cases[k.name].first.push_back(&k);
  for (const store::KernelResultRecord& k : candidate)
    cases[k.name].second.push_back(&k);

  // Each sweep's results, read once: every case of a sweep looks for its BF16 twin there.
  std::map<int64_t, std::vector<store::KernelResultRecord>> sweep_results;
  auto speedup_night = [&](const store::KernelResultRecord& k) {
    auto it = sweep_results.find(k.sweep_id);
    if (it == sweep_results.end()) {
      it = sweep_results.emplace(k.sweep_id, store.kernel_results(k.sweep_id)).first;
    }
    return kernel_speedup_night(store, k, it->second);
  };
  std::vector<GroupResult> groups;
  int only_one_side = 0;
  for (const auto& [name, sides] : cases) {
    if (sides.first.empty() || sides.second.empty()) {
      ++only_one_side;
      continue;
    }
    // One GPU model per case, or, allowed, a warning.
    const std::string want = gpu_model(*sides.second.front());
    for (const auto* side : {&sides.first, &sides.second}) {
      for (const store::KernelResultRecord* k : *side) {
        if (gpu_model(*k) == want) continue;
        const std::string why = fmt::format("kernel result {} ran on {} and kernel result {} on {}",
                                            k->id, gpu_model(*k), sides.second.front()->id, want);
        if (!policy.allow_mismatch) {
          throw InputError(why +
                           "; compare results of one GPU model, or pass --allow-mismatch to "
                           "judge them anyway, with a warning");
        }
        warnings.push_back(why);
        break;
      }
    }
    GroupResult g;
    g.kind = GroupResult::Kind::kernel_results;
    g.workload = name;
    g.recipe = recipe_label(*sides.second.front());
    const KernelSide b = collect(store, sides.first);
    const KernelSide c = collect(store, sides.second);
    g.baseline_runs = b.ids;
    g.candidate_runs = c.ids;
    // A case that was skipped on both sides (unsupported on this device) has nothing to judge.
    if (b.side.ok_count == 0 && c.side.ok_count == 0 && b.failed.empty() && c.failed.empty()) {
      continue;
    }
    if (!b.failed.empty() || !c.failed.empty()) {
      MetricResult r;
      r.metric = Metric::status;
      r.baseline = b.failed.empty() ? "ok" : failures_text(b);
      r.candidate = c.failed.empty() ? "ok" : failures_text(c);
      r.change = "—";
      r.verdict = c.failed.empty() ? Verdict::improved : Verdict::regressed;
      r.reason = c.failed.empty() ? "every candidate result is ok where a baseline one failed"
                                  : "a candidate result failed (validation or an error)";
      g.metrics.push_back(r);
    }
    bool across_sweeps = true;
    for (const store::KernelResultRecord* bk : sides.first) {
      for (const store::KernelResultRecord* ck : sides.second)
        across_sweeps = across_sweeps && bk->sweep_id != ck->sweep_id;
    }
    std::vector<Night> bn, cn;
    if (c.side.ok_count > 0) {
      g.metrics.push_back(
          compare_speed(Metric::kernel_ms, b.side, c.side, across_sweeps, kernel_policy));
      if (across_sweeps) {
        for (const store::KernelResultRecord* k : sides.first)
          if (std::optional<Night> n = speedup_night(*k)) bn.push_back(*n);
        for (const store::KernelResultRecord* k : sides.second)
          if (std::optional<Night> n = speedup_night(*k)) cn.push_back(*n);
        if (!bn.empty() && !cn.empty()) {
          g.metrics.push_back(compare_ratio(Metric::speedup_vs_bf16, bn, cn, kernel_policy));
        }
      }
    }
    if (across_sweeps) {
      for (MetricResult& m : g.metrics) {
        if (m.verdict != Verdict::regressed) continue;
        if (m.metric == Metric::status) {
          m.culprit = name_first_bad_night(b.side.nights_failed, c.side.nights_failed);
        } else if (m.metric == Metric::kernel_ms) {
          m.culprit = name_first_bad_night(b.side.nights_ms, c.side.nights_ms);
        } else {
          m.culprit = name_first_bad_night(bn, cn);
        }
      }
    }
    groups.push_back(std::move(g));
  }
  if (only_one_side > 0) {
    notes.push_back(
        fmt::format("{} kernel case{} measured on one side only ({} or {}), not compared",
                    only_one_side, only_one_side == 1 ? "" : "s", baseline_spec, candidate_spec));
  }
  return groups;
}

}  // namespace lpbench::reports::detail
