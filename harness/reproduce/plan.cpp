#include "harness/reproduce/plan.h"

#include <fmt/format.h>

#include <stdexcept>

#include "base/errors.h"
#include "kernels/recipe.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace lpbench::reproduce {

namespace {

// Why `row` cannot run in this build, or nothing.
std::string missing_piece(const reports::PublishedTable& table, const reports::PublishedRow& row) {
  if (table.reproduction == "none") return "not an lpbench measurement (see the note)";
  if (!row.workload) return "no lpbench workload matches this figure";
  workloads::WorkloadSpec spec;
  try {
    spec = workloads::parse_workload(*row.workload);
  } catch (const std::invalid_argument&) {
    return fmt::format("workload {} not available in this build (unknown level)", *row.workload);
  }
  try {
    workloads::builtin_model(spec.model);
  } catch (const std::out_of_range&) {
    return fmt::format("model {} not available in this build", spec.model);
  }
  for (const std::string& recipe : {*table.baseline_recipe, *row.recipe}) {
    try {
      kernels::recipe_by_name(recipe);
    } catch (const std::out_of_range&) {
      return fmt::format("recipe {} not available in this build", recipe);
    }
  }
  return {};
}

}  // namespace

size_t Plan::runnable() const {
  size_t n = 0;
  for (const PlannedRow& r : rows)
    n += r.unavailable.empty();
  return n;
}

std::string sweep_label(const reports::PublishedTable& table) {
  return "reproduce:" + table.id;
}

Plan make_plan(const reports::PublishedTable& table, const PlanOptions& options) {
  if (options.layers <= 0) {
    throw InputError(fmt::format("--layers must be a positive number, got {}", options.layers));
  }
  if (options.nproc_per_node < 1 || options.nproc_per_node > 1024) {
    throw InputError(
        fmt::format("--nproc-per-node must be between 1 and 1024, got {}", options.nproc_per_node));
  }
  Plan plan;
  plan.table = &table;
  for (const reports::PublishedRow& row : table.rows) {
    PlannedRow planned;
    planned.row = &row;
    planned.layers_published = row.layers;
    planned.unavailable = missing_piece(table, row);
    if (!planned.unavailable.empty()) {
      plan.rows.push_back(std::move(planned));
      continue;
    }
    config::RunConfig config;
    config.workloads = {*row.workload};
    config.recipes = {*table.baseline_recipe, *row.recipe};
    config.steps = options.steps;
    config.seq_len = options.seq_len;
    config.micro_batch = options.micro_batch;
    config.device = options.device;
    config.db = options.db;
    config.memory_budget_gib = options.memory_budget_gib;
    // The depth run: what the device holds, at full width (run's --layers), for model rows.
    const workloads::ModelConfig& published =
        workloads::builtin_model(workloads::parse_workload(*row.workload).model);
    planned.layers_published = row.layers.value_or(published.published_layers);
    if (workloads::parse_workload(*row.workload).level == workloads::Level::model) {
      config.layers = options.full_depth
                          ? std::min(*planned.layers_published, published.published_layers)
                          : std::min(options.layers, published.published_layers);
    }
    try {
      planned.run = config::resolve(config);
    } catch (const InputError& error) {
      // A row this device cannot hold (the memory plan's verdict) runs over several ranks
      // where asked and they hold it; otherwise it is listed, not run.
      planned.unavailable = error.what();
      if (options.nproc_per_node > 1 &&
          workloads::parse_workload(*row.workload).level == workloads::Level::model) {
        config::RunConfig ranked = config;
        ranked.world_size = ranked.nproc_per_node = options.nproc_per_node;
        try {
          planned.run = config::resolve(ranked);
          planned.ranks = options.nproc_per_node;
          planned.unavailable.clear();
        } catch (const InputError& sharded) {
          planned.unavailable = fmt::format("{} (and over {} ranks: {})", error.what(),
                                            options.nproc_per_node, sharded.what());
        }
      }
      if (!planned.unavailable.empty()) {
        plan.rows.push_back(std::move(planned));
        continue;
      }
    }
    planned.run_args = {"--workload", *row.workload,
                        "--recipes",  *table.baseline_recipe + "," + *row.recipe,
                        "--steps",    std::to_string(options.steps),
                        "--device",   options.device,
                        "--db",       options.db,
                        "--label",    sweep_label(table)};
    auto add = [&](const char* flag, auto value) {
      planned.run_args.insert(planned.run_args.end(), {flag, fmt::format("{}", value)});
    };
    if (config.layers > 0) add("--layers", config.layers);
    if (config.seq_len > 0) add("--seq-len", config.seq_len);
    if (config.micro_batch > 0) add("--micro-batch", config.micro_batch);
    if (config.memory_budget_gib > 0.0) add("--memory-budget-gib", config.memory_budget_gib);
    if (planned.ranks > 1) add("--nproc-per-node", planned.ranks);
    const config::ResolvedWorkload& w = planned.run.workloads.front();
    planned.layers_run = w.model.num_layers;
    const workloads::TrainingOptions& t = w.training;
    planned.flops_per_step =
        w.model.flops_per_token(t.seq_len) * static_cast<double>(t.micro_batch * t.seq_len);
    plan.rows.push_back(std::move(planned));
  }
  return plan;
}

}  // namespace lpbench::reproduce
