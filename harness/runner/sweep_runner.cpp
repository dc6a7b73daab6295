#include "harness/runner/sweep_runner.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <numeric>

#include "harness/env/nvml.h"
#include "harness/env/process.h"
#include "harness/env/time_stamp.h"
#include "harness/runner/device_memory.h"
#include "harness/runner/diagnostics.h"
#include "harness/runner/instability.h"
#include "harness/runner/progress.h"
#include "harness/runner/stop_signal.h"
#include "harness/timing/step_timer.h"
#include "harness/timing/trace.h"
#include "kernels/profiling/range.h"
#include "kernels/torch/gemm.h"
#include "kernels/torch/scaled_gemm.h"

namespace lpbench::runner {

namespace {

using store::RunStatus;

// One recipe's run of one workload while the sweep is under way.
struct ActiveRun {
  const kernels::Recipe* recipe = nullptr;
  size_t index = 0;
  int64_t run_id = 0;
  std::unique_ptr<workloads::Workload> workload;
  RunStatus status = RunStatus::running;
  std::optional<std::string> error;
  // Device memory this run holds between its steps (weights, gradients, optimizer state).
  // Interleaved recipes share the allocator, so a run's peak is computed from this rather than
  // read off the allocator's process-wide peak.
  int64_t resident_bytes = 0;
  std::optional<double> first_clock_mhz;
  InstabilityWatch instability;
};

// torch's messages carry a C++ backtrace; the store keeps the message.
std::string error_text(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) {
    return c10_error->what_without_backtrace();
  }
  return error.what();
}

// The CUDA allocator raises c10::OutOfMemoryError, but the CPU allocator fails through an
// enforce (a plain c10::Error: "DefaultCPUAllocator: can't allocate memory" when the system says
// ENOMEM, "... not enough memory" otherwise); both are out of memory, and so is std::bad_alloc.
bool out_of_memory(const std::exception& error) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr ||
      dynamic_cast<const std::bad_alloc*>(&error) != nullptr) {
    return true;
  }
  const auto* c10_error = dynamic_cast<const c10::Error*>(&error);
  return c10_error != nullptr &&
         std::string_view(c10_error->what_without_backtrace()).find("DefaultCPUAllocator: ") !=
             std::string_view::npos;
}

std::vector<store::ModuleRecord> module_records(const workloads::Workload& workload) {
  std::vector<store::ModuleRecord> records;
  for (const kernels::ModuleDecision& d : workload.modules()) {
    records.push_back({0, d.module, std::string(kernels::to_string(d.kind)), d.quantized,
                       kernels::describe(d.gemms), d.reason});
  }
  return records;
}

bool every(int64_t step, int64_t period, int64_t total) {
  return period > 0 && ((step + 1) % period == 0 || step + 1 == total);
}

class Sweep {
 public:
  Sweep(const config::ResolvedRun& run, store::Store& store)
      : run_(run), store_(store), memory_(run.device), timer_(run.device) {}

  SweepOutcome execute(const std::string& command_line, const std::string& label) {
    provenance_ = env::collect_provenance(run_.device);
    profiling::set_region_timing(run_.config.regions, run_.device);
    // The name was validated with the options (check_run_options).
    kernels::set_int8_backend(kernels::int8_backend_named(run_.config.int8_gemm)
                                  .value_or(kernels::Int8Backend::automatic));
    kernels::set_layout_sharing(!run_.config.separate_layout_quantize);
    store::SweepRecord sweep{0,
                             env::utc_now_iso8601(),
                             command_line,
                             provenance_.host,
                             provenance_.lpbench_version,
                             std::nullopt};
    if (!label.empty()) sweep.label = label;
    outcome_.sweep_id = store_.add_sweep(sweep);
    for (const config::ResolvedWorkload& workload : run_.workloads) {
      if (StopSignal::requested()) break;
      run_workload(workload);
    }
    return outcome_;
  }

 private:
  void run_workload(const config::ResolvedWorkload& w) {
    std::vector<std::string> names;
    for (const kernels::Recipe& recipe : run_.recipes)
      names.push_back(recipe.name);
    progress_ = std::make_unique<Progress>(names, run_.config.steps);
    progress_->message(fmt::format("{}: {}", w.spec.text(), w.model.name));
    if (!w.interleave_note.empty()) progress_->message(w.interleave_note);

    runs_.clear();
    for (size_t i = 0; i < run_.recipes.size(); ++i)
      runs_.push_back(start_run(w, i));
    const int64_t steps = run_.config.steps;
    if (w.interleave) {
      // Step by step across recipes, reversing the order every other step so that neither
      // recipe always runs first after the other.
      std::vector<size_t> order(runs_.size());
      std::iota(order.begin(), order.end(), 0);
      for (int64_t step = 0; step < steps && !StopSignal::requested(); ++step) {
        for (size_t i : order) {
          if (keep_going(runs_[i])) train_step(runs_[i], step);
        }
        std::reverse(order.begin(), order.end());
      }
    } else {
      for (ActiveRun& active : runs_) {
        for (int64_t step = 0; step < steps && keep_going(active); ++step)
          train_step(active, step);
        // Done with this recipe: free its memory before the next one builds.
        if (active.status == RunStatus::running) finish(active);
      }
    }
    progress_->finish();
    for (ActiveRun& active : runs_) {
      if (active.status == RunStatus::running) finish(active);
      outcome_.runs.push_back({active.run_id, active.recipe->name, active.status, active.error});
    }
  }

  void finish(ActiveRun& active) {
    sample_device(active, "end", std::nullopt);
    if (StopSignal::requested()) {
      end_run(active, RunStatus::interrupted,
              fmt::format("stopped by signal {}; every finished step is kept",
                          StopSignal::signal_number()));
    } else {
      end_run(active, RunStatus::ok, std::nullopt);
    }
  }

  ActiveRun start_run(const config::ResolvedWorkload& w, size_t index) {
    const kernels::Recipe& recipe = run_.recipes[index];
    ActiveRun active;
    active.recipe = &recipe;
    active.index = index;
    nlohmann::json config = config::run_config_json(run_, w, index);

    // Build first, so that the run records what was built; a failure is recorded all the same.
    std::optional<std::pair<RunStatus, std::string>> failure;
    const int64_t before = memory_.allocated_bytes();
    try {
      // The same seed for every recipe: same initial weights, same batches.
      active.workload = workloads::make_workload(w.spec, w.model, recipe, w.training, run_.device);
      active.resident_bytes = memory_.allocated_bytes() - before;
      config["shapes"] = active.workload->shape_description();
      config["flops_per_step"] = active.workload->flops_per_step();
      const workloads::FlopCount gemm = active.workload->gemm_flops();
      config["gemm_flops_per_step"] = {{"bf16", gemm.bf16}, {"int8", gemm.int8}, {"fp8", gemm.fp8}};
      config["data"] = active.workload->data_description();
    } catch (const std::exception& error) {
      failure = {out_of_memory(error) ? RunStatus::oom : RunStatus::failed,
                 "building the workload: " + error_text(error)};
    }

    const env::ProcessIdentity self = env::current_process();
    store::RunRecord record;
    record.sweep_id = outcome_.sweep_id;
    record.workload = w.spec.text();
    record.recipe = recipe.name;
    record.device = run_.device.str();
    if (recipe.gemms.any_quantized()) {
      record.int8_backend = kernels::gemm_backends(recipe.gemms, run_.device);
    }
    record.config_json = config.dump();
    record.started_at = env::utc_now_iso8601();
    record.pid = self.pid;
    record.process_start = self.start;
    record.provenance = provenance_;
    record.tokens_per_step = w.training.micro_batch * w.training.seq_len;
    record.level = std::string(workloads::to_string(w.spec.level));
    record.model = w.model.name;
    record.layers_run = w.model.num_layers;
    record.layers_published = w.model.published_layers;
    record.data = config["data"].get<std::string>();
    record.memory_estimate_gib = w.memory.at(index).total_gib();
    active.run_id = store_.add_run(record);

    if (failure) {
      end_run(active, failure->first, failure->second);
    } else {
      store_.add_modules(active.run_id, module_records(*active.workload));
    }
    return active;
  }

  static bool keep_going(const ActiveRun& active) {
    return active.status == RunStatus::running && !StopSignal::requested();
  }

  void train_step(ActiveRun& active, int64_t step) {
    const int64_t before = memory_.allocated_bytes();
    memory_.reset_peaks();
    workloads::StepOutput out;
    double step_ms = 0.0;
    bool finite = true;
    const bool traced = step == run_.config.trace_step;
    const bool diagnosed = diagnostic_step(step, run_.config.diagnostics_every, run_.config.steps);
    std::map<std::string, kernels::OperandStats> diagnostics;
    try {
      std::optional<timing::TraceCapture> trace;
      if (traced) trace.emplace(run_.device);
      timer_.start();
      {
        const DiagnosticScope scope(diagnosed);
        const profiling::Range range("step", active.recipe->name);
        out = active.workload->step(step);
      }
      step_ms = timer_.stop_ms();
      if (trace) save_trace(active, step, *trace);
      finite = active.workload->last_step_finite();
      if (diagnosed) diagnostics = kernels::take_operand_stats();
    } catch (const std::exception& error) {
      end_run(active, out_of_memory(error) ? RunStatus::oom : RunStatus::failed,
              fmt::format("step {}: {}", step, error_text(error)));
      return;
    }

    // A traced or diagnosed step carries the profiler's or the diagnostics' overhead: it is
    // kept, but out of the statistics.
    const bool excluded = step < run_.timing_warmup_steps || traced || diagnosed;
    store::StepRecord record{active.run_id, step,        excluded, out.loss.value_or(NAN),
                             step_ms,       out.tokens,  out.lr,   out.grad_norm.value_or(NAN),
                             std::nullopt,  std::nullopt};
    if (memory_.available()) {
      record.peak_mem_gib =
          to_gib(active.resident_bytes + (memory_.peak_allocated_bytes() - before));
      record.peak_reserved_gib = to_gib(memory_.peak_reserved_bytes());
      active.resident_bytes += memory_.allocated_bytes() - before;
    }
    store_.add_step(record);
    store_.add_metrics(diagnostic_metrics(active.run_id, step, diagnostics));
    record_regions(active, step);
    if (step == run_.timing_warmup_steps) sample_device(active, "first_measured", step);
    progress_->step(active.index, step, out.loss, step_ms);
    for (const Instability& event : active.instability.observe(step, out.loss, out.grad_norm)) {
      store_.add_event({0, active.run_id, event.step, event.kind, event.detail, ""});
    }

    if (out.loss && (!std::isfinite(*out.loss) || !std::isfinite(out.grad_norm.value_or(0.0)))) {
      end_run(active, RunStatus::diverged,
              fmt::format("non-finite {} at step {} (loss {}, gradient norm {})",
                          std::isfinite(*out.loss) ? "gradient norm" : "loss", step, *out.loss,
                          out.grad_norm.value_or(NAN)));
      return;
    }
    if (!finite) {
      end_run(active, RunStatus::diverged, fmt::format("non-finite outputs at step {}", step));
      return;
    }
    record_extras(active, step);
  }

  // Sampled figures and validation, outside the timed step.
  void record_extras(ActiveRun& active, int64_t step) {
    const int64_t total = run_.config.steps;
    try {
      if (every(step, run_.config.metrics_every, total)) {
        std::vector<store::MetricRecord> metrics;
        for (const auto& [name, value] : active.workload->step_metrics()) {
          metrics.push_back({active.run_id, step, name, value});
        }
        store_.add_metrics(metrics);
      }
      if (every(step, run_.eval_every, total)) {
        if (auto eval = active.workload->evaluate()) {
          store_.add_eval({active.run_id, step, eval->loss, eval->tokens});
        }
      }
    } catch (const std::exception& error) {
      if (!out_of_memory(error)) throw;
      end_run(active, RunStatus::oom,
              fmt::format("evaluating after step {}: {}", step, error_text(error)));
    }
  }

  void record_regions(const ActiveRun& active, int64_t step) {
    if (!profiling::region_timing()) return;
    std::vector<store::RegionRecord> rows;
    for (const profiling::RegionTime& r : profiling::take_region_times()) {
      rows.push_back({active.run_id, step, r.key, r.calls, r.total_ms});
    }
    store_.add_regions(rows);
  }

  void save_trace(const ActiveRun& active, int64_t step, timing::TraceCapture& trace) {
    std::string base = run_.config.db;
    if (base.size() > 3 && base.substr(base.size() - 3) == ".db") base.resize(base.size() - 3);
    const std::string path = fmt::format("{}-run{}-step{}.trace.json", base, active.run_id, step);
    trace.save(path);
    store_.add_artifact({0, active.run_id, "trace", step, path,
                         "torch profiler (kineto), Chrome/Perfetto JSON; this step is left out of "
                         "the timing statistics"});
    progress_->message(
        fmt::format("{}: trace of step {} written to {}", active.recipe->name, step, path));
  }

  // The GPU's clocks at the first measured step and at the end: a run whose SM clock fell (or
  // that NVML saw slowed by power or heat) is flagged, not averaged in quietly.
  void sample_device(ActiveRun& active, const char* phase, std::optional<int64_t> step) {
    if (!run_.device.is_cuda() || !env::Nvml::instance().available()) return;
    const env::GpuSample s = env::Nvml::instance().sample(run_.device.index());
    store::DeviceSampleRecord record;
    record.run_id = active.run_id;
    record.phase = phase;
    record.step = step;
    record.sm_clock_mhz = s.sm_clock_mhz;
    record.memory_clock_mhz = s.memory_clock_mhz;
    record.temperature_c = s.temperature_c;
    record.power_w = s.power_w;
    if (s.throttle_reasons) record.throttle_reasons = static_cast<int64_t>(*s.throttle_reasons);
    record.throttle_text = s.throttle_text;
    store_.add_device_sample(record);
    if (std::string(phase) == "first_measured") {
      active.first_clock_mhz = s.sm_clock_mhz;
      return;
    }
    if (!active.first_clock_mhz || !s.sm_clock_mhz) return;
    const bool fell = env::clock_fell(*active.first_clock_mhz, *s.sm_clock_mhz, s.throttle_reasons);
    store_.set_clock_fell(active.run_id, fell);
    if (fell) {
      store_.add_event(
          {0, active.run_id, std::nullopt, "clock_drop",
           fmt::format("SM clock {:.0f} MHz at the first measured step, {:.0f} MHz at "
                       "the end{}",
                       *active.first_clock_mhz, *s.sm_clock_mhz,
                       s.throttle_text.empty() ? "" : "; slowed by " + s.throttle_text),
           ""});
    }
  }

  void end_run(ActiveRun& active, RunStatus status, std::optional<std::string> error) {
    active.status = status;
    active.error = std::move(error);
    active.workload.reset();
    memory_.release_cached();
    store_.finish_run(active.run_id, status, active.error);
    if (status != RunStatus::ok && progress_) {
      progress_->message(fmt::format("{}: {} — {}", active.recipe->name, store::to_string(status),
                                     active.error.value_or("")));
    }
  }

  const config::ResolvedRun& run_;
  store::Store& store_;
  DeviceMemory memory_;
  timing::StepTimer timer_;
  env::Provenance provenance_;
  std::unique_ptr<Progress> progress_;
  std::vector<ActiveRun> runs_;
  SweepOutcome outcome_;
  StopSignal stop_signal_;
};

}  // namespace

bool SweepOutcome::all_ok() const {
  return std::all_of(runs.begin(), runs.end(),
                     [](const RunOutcome& r) { return r.status == RunStatus::ok; });
}

SweepOutcome run_sweep(const config::ResolvedRun& run, store::Store& store,
                       const std::string& command_line, const std::optional<std::string>& label) {
  Sweep sweep(run, store);
  return sweep.execute(command_line, label ? *label : run.config.label);
}

}  // namespace lpbench::runner
