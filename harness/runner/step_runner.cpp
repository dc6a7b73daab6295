#include "harness/runner/step_runner.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "harness/runner/diagnostics.h"
#include "harness/runner/machine_watch.h"
#include "harness/runner/stop_signal.h"
#include "harness/timing/memory_snapshot.h"
#include "harness/timing/trace.h"
#include "kernels/profiling/range.h"
#include "workloads/parallel/group.h"

namespace lpbench::runner {

namespace {

using store::RunStatus;

bool every(int64_t step, int64_t period, int64_t total) {
  return period > 0 && ((step + 1) % period == 0 || step + 1 == total);
}

// The trace goes beside the database: <db without .db>-run<N>-step<S>.trace.json.
// Where a file about one step of a run goes: beside the database, named after both (and after
// the rank past rank 0, whose database is a scratch file and whose files would collide).
std::string step_file(const SweepContext& context, const ActiveRun& active, int64_t step,
                      std::string_view suffix) {
  const config::RunConfig& config = context.run.config;
  std::string base = config.db;
  if (base.size() > 3 && base.substr(base.size() - 3) == ".db") base.resize(base.size() - 3);
  const std::string rank = config.rank > 0 ? fmt::format("-rank{}", config.rank) : "";
  return fmt::format("{}-run{}-step{}{}.{}", base, active.run_id, step, rank, suffix);
}

void save_trace(SweepContext& context, const ActiveRun& active, int64_t step,
                timing::TraceCapture& trace) {
  const std::string path = step_file(context, active, step, "trace.json");
  trace.save(path);
  context.store.add_artifact({0, active.run_id, "trace", step, path,
                              "torch profiler (kineto), Chrome/Perfetto JSON; this step is left "
                              "out of the timing statistics"});
  context.message(
      fmt::format("{}: trace of step {} written to {}", active.recipe->name, step, path));
}

void save_memory_snapshot(SweepContext& context, const ActiveRun& active, int64_t step,
                          timing::MemorySnapshot& snapshot) {
  const std::string path = step_file(context, active, step, "memory.pickle");
  snapshot.save(path);
  context.store.add_artifact(
      {0, active.run_id, "memory-snapshot", step, path,
       "CUDA caching allocator: this step's allocations, frees and mappings, each named by its "
       "lpbench region, and the allocator's state at its end (torch's pickled snapshot: "
       "pytorch.org/memory_viz); this step is left out of the timing statistics"});
  context.message(
      fmt::format("{}: memory snapshot of step {} written to {}", active.recipe->name, step, path));
}

void record_regions(SweepContext& context, const ActiveRun& active, int64_t step) {
  if (!profiling::region_timing()) return;
  std::vector<store::RegionRecord> rows;
  for (const profiling::RegionTime& r : profiling::take_region_times()) {
    rows.push_back({active.run_id, step, r.key, r.calls, r.total_ms});
  }
  context.store.add_regions(rows);
}

// Sampled figures and validation, outside the timed step.
void record_extras(SweepContext& context, ActiveRun& active, int64_t step) {
  const config::ResolvedRun& run = context.run;
  const int64_t total = run.config.steps;
  try {
    if (every(step, run.config.metrics_every, total)) {
      std::vector<store::MetricRecord> metrics;
      for (const auto& [name, value] : active.workload->step_metrics()) {
        metrics.push_back({active.run_id, step, name, value});
      }
      context.store.add_metrics(metrics);
    }
    if (every(step, run.eval_every, total)) {
      if (auto eval = active.workload->evaluate()) {
        context.store.add_eval({active.run_id, step, eval->loss, eval->tokens});
      }
      // Evaluation's regions are no step's: left in the records, they would be taken into the
      // next step's hotspots (whichever recipe steps next).
      if (profiling::region_timing()) profiling::discard_region_times();
    }
  } catch (const std::exception& error) {
    if (!out_of_memory(error)) throw;
    end_run(context, active, RunStatus::oom,
            fmt::format("evaluating after step {}: {}", step, error_text(error)));
  }
}

// --cuda-graph: the step captured once, before the second step and outside its timing and its
// memory window (what the graph keeps allocated is the graph's, not a step's peak).
bool capture_step(SweepContext& context, ActiveRun& active, int64_t step) {
  try {
    active.graph =
        std::make_unique<StepGraph>([&active, step] { return active.workload->step(step); });
    return true;
  } catch (const std::exception& error) {
    end_run(context, active, out_of_memory(error) ? RunStatus::oom : RunStatus::failed,
            fmt::format("capturing step {} into a CUDA graph: {}", step, error_text(error)));
    return false;
  }
}

void one_step(SweepContext& context, ActiveRun& active, int64_t step) {
  const config::ResolvedRun& run = context.run;
  const bool replayed = run.config.cuda_graph && step >= 1;
  if (replayed && !active.graph && !capture_step(context, active, step)) return;
  const int64_t before = context.memory.allocated_bytes();
  const int64_t retries_before = context.memory.allocation_retries();
  context.memory.reset_peaks();
  workloads::StepOutput out;
  double step_ms = 0.0;
  bool finite = true;
  const bool traced = step == run.config.trace_step;
  const bool snapshotted = step == run.config.memory_snapshot_step;
  const bool diagnosed = diagnostic_step(step, run.config.diagnostics_every, run.config.steps);
  std::map<std::string, kernels::OperandStats> diagnostics;
  std::optional<double> sm_clock_mhz;
  try {
    std::optional<timing::TraceCapture> trace;
    if (traced) trace.emplace(run.device);
    std::optional<timing::MemorySnapshot> snapshot;
    if (snapshotted) snapshot.emplace(run.device);
    context.timer.start();
    {
      const DiagnosticScope scope(diagnosed);
      const profiling::Range range("step", active.recipe->name);
      out = replayed ? active.graph->replay() : active.workload->step(step);
    }
    context.timer.stop();
    sm_clock_mhz = step_sm_clock(context);
    step_ms = context.timer.elapsed_ms();
    if (trace) save_trace(context, active, step, *trace);
    if (snapshot) save_memory_snapshot(context, active, step, *snapshot);
    finite = active.workload->last_step_finite();
    if (diagnosed) diagnostics = kernels::take_operand_stats();
  } catch (const std::exception& error) {
    end_run(context, active, out_of_memory(error) ? RunStatus::oom : RunStatus::failed,
            fmt::format("step {}: {}", step, error_text(error)));
    return;
  }

  // A traced, snapshotted or diagnosed step carries the profiler's, the allocator history's or
  // the diagnostics' overhead: it is kept, but out of the statistics.
  const bool excluded = step < run.timing_warmup_steps || traced || snapshotted || diagnosed;
  store::StepRecord record{active.run_id, step,         excluded,    out.loss.value_or(NAN),
                           step_ms,       out.tokens,   out.lr,      out.grad_norm.value_or(NAN),
                           std::nullopt,  std::nullopt, sm_clock_mhz};
  // A replayed step allocates nothing the allocator sees (its tensors live in the graph's pool):
  // its peak allocated is not measurable, and is left empty rather than recorded as the resident.
  if (!replayed) {
    record.peak_mem_gib =
        to_gib(active.resident_bytes + (context.memory.peak_allocated_bytes() - before));
  }
  if (const auto reserved = context.memory.peak_reserved_bytes()) {
    record.peak_reserved_gib = to_gib(*reserved);
  }
  active.resident_bytes += context.memory.allocated_bytes() - before;
  context.store.add_step(record);
  context.store.add_metrics(diagnostic_metrics(active.run_id, step, diagnostics));
  if (const int64_t retries = context.memory.allocation_retries() - retries_before; retries > 0) {
    context.store.add_metrics(
        {{active.run_id, step, store::kAllocationRetriesMetric, static_cast<double>(retries)}});
  }
  record_regions(context, active, step);
  if (step == run.timing_warmup_steps) watch_first_measured(context, active, step);
  context.progress->step(active.index, step, out.loss, step_ms);
  for (const Instability& event : active.instability.observe(step, out.loss, out.grad_norm)) {
    context.store.add_event({0, active.run_id, event.step, event.kind, event.detail, ""});
  }

  if (out.loss && (!std::isfinite(*out.loss) || !std::isfinite(out.grad_norm.value_or(0.0)))) {
    end_run(context, active, RunStatus::diverged,
            fmt::format("non-finite {} at step {} (loss {}, gradient norm {})",
                        std::isfinite(*out.loss) ? "gradient norm" : "loss", step, *out.loss,
                        out.grad_norm.value_or(NAN)));
    return;
  }
  if (!finite) {
    end_run(context, active, RunStatus::diverged,
            fmt::format("non-finite outputs at step {}", step));
    return;
  }
  record_extras(context, active, step);
}

// Data parallel: whether any rank was asked to stop, so that all stop after this same step.
void agree_to_stop(const SweepContext& context) {
  const std::shared_ptr<const workloads::parallel::Group>& group = context.run.group;
  if (!group) return;
  at::Tensor flag = at::full({1}, StopSignal::arrived() ? 1.0 : 0.0,
                             at::TensorOptions().dtype(at::kFloat).device(group->device));
  try {
    workloads::parallel::all_reduce_sum(*group, flag);
    StopSignal::agree(flag.item<float>() > 0.0F);
  } catch (const std::exception&) {
    // The group broke: this run has ended or its next step will end it, naming why.
  }
}

}  // namespace

void train_step(SweepContext& context, ActiveRun& active, int64_t step) {
  one_step(context, active, step);
  agree_to_stop(context);
}

}  // namespace lpbench::runner
