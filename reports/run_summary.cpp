#include "reports/run_summary.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

namespace lpbench::reports {

std::optional<double> final_loss(const std::vector<store::StepRecord>& steps, double share) {
  if (steps.empty()) return std::nullopt;
  const auto count = std::max<size_t>(
      1, static_cast<size_t>(std::ceil(share * static_cast<double>(steps.size()))));
  double sum = 0.0;
  for (size_t i = steps.size() - count; i < steps.size(); ++i)
    sum += steps[i].loss;
  return sum / static_cast<double>(count);
}

std::optional<double> run_final_loss(const store::RunRecord& run,
                                     const std::vector<store::StepRecord>& steps) {
  if (run.level != "model") return std::nullopt;
  return final_loss(steps, kFinalLossShare);
}

RunSummary summarize_run(const store::RunRecord& run, const std::vector<store::StepRecord>& steps) {
  RunSummary s;
  s.run = run;
  s.steps_recorded = static_cast<int64_t>(steps.size());
  std::vector<double> times;
  std::vector<double> clocks;
  for (const store::StepRecord& step : steps) {
    if (step.warmup) continue;
    times.push_back(step.step_ms);
    if (step.sm_clock_mhz) clocks.push_back(*step.sm_clock_mhz);
    if (step.peak_mem_gib)
      s.peak_mem_gib = std::max(s.peak_mem_gib.value_or(0.0), *step.peak_mem_gib);
  }
  s.step_ms = stats::summarize(times);
  if (!clocks.empty()) s.sm_clock_mhz = stats::summarize(clocks);
  if (s.step_ms.count > 0 && s.step_ms.median > 0.0) {
    s.tokens_per_s = static_cast<double>(run.tokens_per_step) / (s.step_ms.median / 1000.0);
  }
  s.final_loss = run_final_loss(run, steps);
  return s;
}

namespace {

void add_allocation_retries(RunSummary& s, const std::vector<store::StepRecord>& steps,
                            const std::vector<store::MetricRecord>& metrics) {
  std::set<int64_t> measured;
  for (const store::StepRecord& step : steps) {
    if (!step.warmup) measured.insert(step.step);
  }
  std::set<int64_t> retried;
  for (const store::MetricRecord& m : metrics) {
    if (m.name == store::kAllocationRetriesMetric && m.value > 0 && measured.count(m.step) > 0) {
      retried.insert(m.step);
    }
  }
  s.steps_with_allocation_retries = static_cast<int64_t>(retried.size());
}

}  // namespace

RunSummary summarize_stored_run(const store::Store& store, const store::RunRecord& run) {
  const std::vector<store::StepRecord> steps = store.steps(run.id);
  RunSummary s = summarize_run(run, steps);
  add_allocation_retries(s, steps, store.metrics(run.id, store::kAllocationRetriesMetric));
  return s;
}

void compare_with_bf16(std::vector<RunSummary>& runs) {
  for (RunSummary& candidate : runs) {
    const auto baseline = std::find_if(runs.begin(), runs.end(), [&](const RunSummary& b) {
      return b.run.recipe == "bf16" && b.run.workload == candidate.run.workload &&
             b.run.sweep_id == candidate.run.sweep_id;
    });
    if (baseline == runs.end()) continue;
    std::optional<std::string> refusal = speedup_refusal(baseline->run, baseline->step_ms);
    if (!refusal && &*baseline != &candidate) {
      refusal = speedup_refusal(candidate.run, candidate.step_ms);
    }
    if (refusal) {
      candidate.no_speedup = *refusal;
      continue;
    }
    candidate.speedup = speedup(baseline->step_ms, candidate.step_ms);
    if (candidate.final_loss && baseline->final_loss && std::isfinite(*baseline->final_loss) &&
        *baseline->final_loss != 0.0) {
      candidate.loss_gap_pct =
          100.0 * (*candidate.final_loss - *baseline->final_loss) / *baseline->final_loss;
    }
  }
}

bool replayed_from_graph(const store::RunRecord& run) {
  const nlohmann::json config = nlohmann::json::parse(run.config_json, nullptr, false);
  if (!config.is_object()) return false;
  const auto it = config.find("cuda_graph");
  return it != config.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace lpbench::reports
