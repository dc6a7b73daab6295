#include "harness/runner/active_run.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <new>
#include <string_view>

#include "base/env/process.h"
#include "base/env/time_stamp.h"
#include "harness/runner/machine_watch.h"
#include "harness/runner/rank_figures.h"
#include "harness/runner/stop_signal.h"
#include "kernels/torch/scaled_gemm.h"
#include "workloads/parallel/group.h"

namespace lpbench::runner {

namespace {

using store::RunStatus;

std::vector<store::ModuleRecord> module_records(const workloads::Workload& workload) {
  std::vector<store::ModuleRecord> records;
  for (const kernels::ModuleDecision& d : workload.modules()) {
    records.push_back({0, d.module, std::string(kernels::to_string(d.kind)), d.quantized,
                       kernels::describe(d.gemms), d.reason});
  }
  return records;
}

// The run's row as it starts, from the resolved workload and (where built) its configuration.
store::RunRecord run_record(const SweepContext& context, const config::ResolvedWorkload& w,
                            size_t index, const nlohmann::json& config) {
  const kernels::Recipe& recipe = context.run.recipes[index];
  const env::ProcessIdentity self = env::current_process();
  store::RunRecord record;
  record.sweep_id = context.sweep_id;
  record.workload = w.spec.text();
  record.recipe = recipe.name;
  record.device = context.run.device.str();
  if (recipe.gemms.any_quantized()) {
    record.int8_backend = kernels::gemm_backends(recipe.gemms, context.run.device);
  }
  record.config_json = config.dump();
  record.started_at = env::utc_now_iso8601();
  record.pid = self.pid;
  record.process_start = self.start;
  record.provenance = context.provenance;
  record.tokens_per_step = w.training.grad_accum * w.training.micro_batch * w.training.seq_len *
                           std::max(1, w.training.data_parallel_size);
  record.level = std::string(workloads::to_string(w.spec.level));
  record.model = w.model.name;
  record.layers_run = w.model.num_layers;
  record.layers_published = w.model.published_layers;
  record.data = config["data"].get<std::string>();
  record.memory_estimate_gib = w.memory.at(index).total_gib();
  record.world_size = std::max<int64_t>(1, context.run.config.world_size);
  record.sharding = config::sharding_of(context.run, w);
  return record;
}

}  // namespace

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

ActiveRun start_run(SweepContext& context, const config::ResolvedWorkload& w, size_t index) {
  const kernels::Recipe& recipe = context.run.recipes[index];
  ActiveRun active;
  active.recipe = &recipe;
  active.index = index;
  nlohmann::json config = config::run_config_json(context.run, w, index);

  // Build first, so that the run records what was built; a failure is recorded all the same.
  std::optional<std::pair<RunStatus, std::string>> failure;
  const int64_t before = context.memory.allocated_bytes();
  try {
    // The same seed for every recipe: same initial weights, same batches.
    active.workload =
        workloads::make_workload(w.spec, w.model, recipe, w.training, context.run.device);
    active.resident_bytes = context.memory.allocated_bytes() - before;
    config["shapes"] = active.workload->shape_description();
    config["flops_per_step"] = active.workload->flops_per_step();
    const workloads::FlopCount gemm = active.workload->gemm_flops();
    config["gemm_flops_per_step"] = {{"bf16", gemm.bf16}, {"int8", gemm.int8}, {"fp8", gemm.fp8}};
    config["data"] = active.workload->data_description();
    std::string operators = active.workload->operators();
    if (context.run.config.cuda_graph) {
      operators += operators.empty() ? "steps replayed from a CUDA graph"
                                     : "; steps replayed from a CUDA graph";
    }
    if (!operators.empty()) config["operators"] = operators;
  } catch (const std::exception& error) {
    failure = {out_of_memory(error) ? RunStatus::oom : RunStatus::failed,
               "building the workload: " + error_text(error)};
  }
  active.run_id = context.store.add_run(run_record(context, w, index, config));
  if (failure) {
    end_run(context, active, failure->first, failure->second);
    return active;
  }
  context.store.add_modules(active.run_id, module_records(*active.workload));
  watch_start(context, active);
  return active;
}

ActiveRun skip_run(SweepContext& context, const config::ResolvedWorkload& w, size_t index) {
  ActiveRun active;
  active.recipe = &context.run.recipes[index];
  active.index = index;
  active.run_id = context.store.add_run(
      run_record(context, w, index, config::run_config_json(context.run, w, index)));
  end_run(context, active, RunStatus::interrupted,
          fmt::format("not started: the sweep was stopped by signal {} before its turn",
                      StopSignal::signal_number()));
  return active;
}

void end_run(SweepContext& context, ActiveRun& active, RunStatus status,
             std::optional<std::string> error) {
  active.status = status;
  active.error = std::move(error);
  active.graph.reset();  // its pool holds the workload's step memory
  active.workload.reset();
  context.memory.release_cached();
  watch_end(context, active);
  context.store.finish_run(active.run_id, status, active.error);
  if (context.run.group && status != RunStatus::ok && status != RunStatus::diverged) {
    // A rank whose run failed alone must not meet its peers' collectives with the next run's
    // (the loss and gradient norm are global: every rank diverges at the same step).
    workloads::parallel::mark_broken(fmt::format("rank {}'s run {} ended {}",
                                                 context.run.group->rank, active.run_id,
                                                 store::to_string(status)));
  }
  if (status == RunStatus::ok) record_rank_figures(context, active);
  if (status != RunStatus::ok) {
    context.message(fmt::format("{}: {} — {}", active.recipe->name, store::to_string(status),
                                active.error.value_or("")));
  }
}

void finish_run(SweepContext& context, ActiveRun& active) {
  if (StopSignal::requested()) {
    end_run(context, active, RunStatus::interrupted,
            fmt::format("stopped by signal {}; every finished step is kept",
                        StopSignal::signal_number()));
  } else {
    end_run(context, active, RunStatus::ok, std::nullopt);
  }
}

bool keep_going(const ActiveRun& active) {
  return active.status == RunStatus::running && !StopSignal::requested();
}

}  // namespace lpbench::runner
