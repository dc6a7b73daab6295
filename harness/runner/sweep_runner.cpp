#include "harness/runner/sweep_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/env/time_stamp.h"
#include "harness/env/provenance_probe.h"
#include "harness/runner/active_run.h"
#include "harness/runner/step_runner.h"
#include "harness/runner/stop_signal.h"
#include "harness/runner/sweep_context.h"
#include "kernels/profiling/range.h"
#include "kernels/torch/gemm.h"
#include "kernels/torch/scaled_gemm.h"

namespace lpbench::runner {

namespace {

using store::RunStatus;

RunOutcome outcome_of(const ActiveRun& active) {
  return {active.run_id, active.recipe->name, active.status, active.error};
}

// Every recipe built up front, then stepped in turn, reversing the order every other step so
// that neither recipe always runs first after the other: drift of the machine hits all alike.
void run_interleaved(SweepContext& context, const config::ResolvedWorkload& w,
                     SweepOutcome& outcome) {
  std::vector<ActiveRun> runs;
  for (size_t i = 0; i < context.run.recipes.size(); ++i)
    runs.push_back(start_run(context, w, i));
  std::vector<size_t> order(runs.size());
  std::iota(order.begin(), order.end(), 0);
  for (int64_t step = 0; step < context.run.config.steps && !StopSignal::requested(); ++step) {
    for (size_t i : order) {
      if (keep_going(runs[i])) train_step(context, runs[i], step);
    }
    std::reverse(order.begin(), order.end());
  }
  for (ActiveRun& active : runs) {
    if (active.status == RunStatus::running) finish_run(context, active);
    outcome.runs.push_back(outcome_of(active));
  }
}

// One recipe after another, each built when its turn comes and freed before the next is built,
// so that the sweep's peak memory is one recipe's (the memory plan chose this where the recipes
// do not fit together, or --no-interleave asked for it).
void run_sequential(SweepContext& context, const config::ResolvedWorkload& w,
                    SweepOutcome& outcome) {
  for (size_t i = 0; i < context.run.recipes.size(); ++i) {
    if (StopSignal::requested()) {
      outcome.runs.push_back(outcome_of(skip_run(context, w, i)));
      continue;
    }
    ActiveRun active = start_run(context, w, i);
    for (int64_t step = 0; step < context.run.config.steps && keep_going(active); ++step)
      train_step(context, active, step);
    if (active.status == RunStatus::running) finish_run(context, active);
    outcome.runs.push_back(outcome_of(active));
  }
}

}  // namespace

bool SweepOutcome::all_ok() const {
  return std::all_of(runs.begin(), runs.end(),
                     [](const RunOutcome& r) { return r.status == RunStatus::ok; });
}

SweepOutcome run_sweep(const config::ResolvedRun& run, store::Store& store,
                       const std::string& command_line, const std::optional<std::string>& label) {
  const StopSignal stop_signal;
  if (run.group) StopSignal::use_agreement();
  SweepContext context(run, store);
  context.provenance = env::collect_provenance(run.device);
  profiling::set_region_timing(run.config.regions, run.device);
  // The name was validated with the options (check_run_options).
  kernels::set_int8_backend(
      kernels::int8_backend_named(run.config.int8_gemm).value_or(kernels::Int8Backend::automatic));
  kernels::set_layout_sharing(!run.config.separate_layout_quantize);

  store::SweepRecord sweep{0,
                           env::utc_now_iso8601(),
                           command_line,
                           context.provenance.host,
                           context.provenance.lpbench_version,
                           std::nullopt};
  const std::string& series = label ? *label : run.config.label;
  if (!series.empty()) sweep.label = series;
  SweepOutcome outcome;
  outcome.sweep_id = context.sweep_id = store.add_sweep(sweep);
  for (const config::ResolvedWorkload& w : run.workloads) {
    if (StopSignal::requested()) break;
    std::vector<std::string> names;
    for (const kernels::Recipe& recipe : run.recipes)
      names.push_back(recipe.name);
    context.progress = std::make_unique<Progress>(names, run.config.steps, stderr, run.config.rank);
    context.message(fmt::format("{}: {}", w.spec.text(), w.model.name));
    if (!w.plan_note.empty()) context.message(w.plan_note);
    if (!w.interleave_note.empty()) context.message(w.interleave_note);
    if (w.interleave) {
      run_interleaved(context, w, outcome);
    } else {
      run_sequential(context, w, outcome);
    }
    context.progress->finish();
  }
  return outcome;
}

}  // namespace lpbench::runner
