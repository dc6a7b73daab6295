#include "harness/runner/sweep_runner.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "harness/env/process.h"
#include "harness/env/time_stamp.h"
#include "harness/runner/device_memory.h"
#include "harness/runner/progress.h"
#include "harness/runner/stop_signal.h"
#include "harness/timing/step_timer.h"
#include "kernels/torch/int8_ops.h"

namespace lpbench::runner {

namespace {

using store::RunStatus;

// One recipe's run while the sweep is under way.
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
};

// torch's messages carry a C++ backtrace; the store keeps the message.
std::string error_text(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) {
    return c10_error->what_without_backtrace();
  }
  return error.what();
}

std::vector<store::ModuleRecord> module_records(const workloads::Workload& workload) {
  std::vector<store::ModuleRecord> records;
  for (const kernels::ModuleDecision& d : workload.modules()) {
    records.push_back({0, d.module, std::string(kernels::to_string(d.kind)), d.quantized,
                       kernels::describe(d.gemms), d.reason});
  }
  return records;
}

class Sweep {
 public:
  Sweep(const config::ResolvedRun& run, store::Store& store)
      : run_(run), store_(store), memory_(run.device), timer_(run.device) {}

  SweepOutcome execute(const std::string& command_line, const std::optional<std::string>& label) {
    const env::Provenance provenance = env::collect_provenance(run_.device);
    const int64_t sweep_id = store_.add_sweep({0, env::utc_now_iso8601(), command_line,
                                               provenance.host, provenance.lpbench_version, label});
    std::vector<std::string> names;
    for (const kernels::Recipe& recipe : run_.recipes)
      names.push_back(recipe.name);
    progress_ = std::make_unique<Progress>(names, run_.config.steps);

    for (size_t i = 0; i < run_.recipes.size(); ++i) {
      runs_.push_back(start_run(sweep_id, run_.recipes[i], i, provenance));
    }
    if (run_.config.interleave) {
      train_interleaved();
    } else {
      for (ActiveRun& active : runs_) {
        for (int64_t step = 0; step < run_.config.steps && keep_going(active); ++step) {
          train_step(active, step);
        }
      }
    }
    progress_->finish();

    SweepOutcome outcome{sweep_id, {}};
    for (ActiveRun& active : runs_) {
      if (active.status == RunStatus::running) {
        if (StopSignal::requested()) {
          end_run(active, RunStatus::interrupted,
                  fmt::format("stopped by signal {}; every finished step is kept",
                              StopSignal::signal_number()));
        } else {
          end_run(active, RunStatus::ok, std::nullopt);
        }
      }
      outcome.runs.push_back({active.run_id, active.recipe->name, active.status, active.error});
    }
    return outcome;
  }

 private:
  ActiveRun start_run(int64_t sweep_id, const kernels::Recipe& recipe, size_t index,
                      const env::Provenance& provenance) {
    ActiveRun active;
    active.recipe = &recipe;
    active.index = index;
    const env::ProcessIdentity self = env::current_process();
    store::RunRecord record;
    record.sweep_id = sweep_id;
    record.workload = run_.workload.text();
    record.recipe = recipe.name;
    record.device = run_.device.str();
    if (recipe.gemms.any_quantized()) record.int8_backend = kernels::int8_gemm_backend(run_.device);
    record.config_json = config::run_config_json(run_, recipe).dump();
    record.started_at = env::utc_now_iso8601();
    record.pid = self.pid;
    record.process_start = self.start;
    record.provenance = provenance;
    record.tokens_per_step = run_.training.micro_batch * run_.training.seq_len;
    record.level = std::string(workloads::to_string(run_.workload.level));
    record.model = run_.model.name;
    record.layers_run = run_.model.num_layers;
    record.layers_published = run_.model.num_layers;
    record.data = run_.config.data;
    active.run_id = store_.add_run(record);

    const int64_t before = memory_.allocated_bytes();
    try {
      // The same seed for every recipe: same initial weights, same batches.
      active.workload =
          workloads::make_workload(run_.workload, run_.model, recipe, run_.training, run_.device);
      active.resident_bytes = memory_.allocated_bytes() - before;
    } catch (const c10::OutOfMemoryError& error) {
      end_run(active, RunStatus::oom, "building the workload: " + error_text(error));
      return active;
    } catch (const std::exception& error) {
      end_run(active, RunStatus::failed, "building the workload: " + error_text(error));
      return active;
    }
    store_.add_modules(active.run_id, module_records(*active.workload));
    return active;
  }

  // Step by step across recipes, reversing the order every other step so that neither recipe
  // always runs first after the other.
  void train_interleaved() {
    std::vector<size_t> order(runs_.size());
    std::iota(order.begin(), order.end(), 0);
    for (int64_t step = 0; step < run_.config.steps && !StopSignal::requested(); ++step) {
      for (size_t i : order) {
        if (keep_going(runs_[i])) train_step(runs_[i], step);
      }
      std::reverse(order.begin(), order.end());
    }
  }

  static bool keep_going(const ActiveRun& active) {
    return active.status == RunStatus::running && !StopSignal::requested();
  }

  void train_step(ActiveRun& active, int64_t step) {
    const int64_t before = memory_.allocated_bytes();
    memory_.reset_peaks();
    workloads::StepOutput out;
    double step_ms = 0.0;
    try {
      timer_.start();
      out = active.workload->step(step);
      step_ms = timer_.stop_ms();
    } catch (const c10::OutOfMemoryError& error) {
      end_run(active, RunStatus::oom, fmt::format("step {}: {}", step, error_text(error)));
      return;
    } catch (const std::exception& error) {
      end_run(active, RunStatus::failed, fmt::format("step {}: {}", step, error_text(error)));
      return;
    }

    store::StepRecord record{active.run_id, step,          step < run_.timing_warmup_steps,
                             out.loss,      step_ms,       out.tokens,
                             out.lr,        out.grad_norm, std::nullopt,
                             std::nullopt};
    if (memory_.available()) {
      record.peak_mem_gib =
          to_gib(active.resident_bytes + (memory_.peak_allocated_bytes() - before));
      record.peak_reserved_gib = to_gib(memory_.peak_reserved_bytes());
      active.resident_bytes += memory_.allocated_bytes() - before;
    }
    store_.add_step(record);
    progress_->step(active.index, step, out.loss, step_ms);

    if (!std::isfinite(out.loss) || !std::isfinite(out.grad_norm)) {
      end_run(active, RunStatus::diverged,
              fmt::format("non-finite {} at step {} (loss {}, gradient norm {})",
                          std::isfinite(out.loss) ? "gradient norm" : "loss", step, out.loss,
                          out.grad_norm));
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
  std::unique_ptr<Progress> progress_;
  std::vector<ActiveRun> runs_;
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
  return sweep.execute(command_line, label);
}

}  // namespace lpbench::runner
