#pragma once

#include <torch/types.h>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/config/run_options.h"
#include "kernels/recipe.h"
#include "workloads/levels/memory_plan.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace lpbench::config {

// One workload of a sweep, checked and sized.
struct ResolvedWorkload {
  workloads::WorkloadSpec spec;
  workloads::ModelConfig model;  // at the depth run
  std::string model_notes;       // what an imported config.json has that lpbench does not model
  workloads::TrainingOptions training;
  // The memory plan of each recipe, in the order of ResolvedRun::recipes.
  std::vector<workloads::MemoryEstimate> memory;
  bool interleave = true;
  std::string interleave_note;  // why interleaving was turned off, when it was
  // What the memory plan chose for a model that does not fit as asked (activation checkpointing,
  // a smaller micro-batch) and why; empty when it chose nothing.
  std::string plan_note;
};

// A RunConfig checked and filled in: everything the runner needs, with no defaults left open.
struct ResolvedRun {
  RunConfig config;
  std::vector<ResolvedWorkload> workloads;
  std::vector<kernels::Recipe> recipes;
  torch::Device device{torch::kCPU};
  double device_memory_gib = 0.0;
  int64_t timing_warmup_steps = 0;
  int64_t eval_every = 0;
  // Data parallel: the ranks this process joined (set once joined; null for one process). Each
  // model workload's TrainingOptions::group is the same.
  std::shared_ptr<const workloads::parallel::Group> group;
};

// "auto", "cpu", "cuda" or "cuda:N" as a device; InputError for anything else or an absent GPU.
torch::Device resolve_device(const std::string& text);

// Throws InputError naming the first problem found and what to do about it. Touches nothing.
// A workload that cannot fit on the device is refused with the memory plan's estimate, the
// device's memory, and the largest --layers or --micro-batch that fits.
ResolvedRun resolve(const RunConfig& config);

// How a data-parallel run shares its state, as the store records it ("zero1 (nccl)": optimizer
// state sharded, over NCCL); nullopt for one process.
std::optional<std::string> sharding_of(const ResolvedRun& run, const ResolvedWorkload& w);

// The largest micro-batch whose planned peak under run.recipes[recipe] fits the run's memory
// (the device's, or --memory-budget-gib), at the workload's depth, sequence length and
// recomputation as resolved; 0 where none does. `at_limit`: it is the most tokens a step that
// lpbench takes (--micro-batch × --seq-len), not a memory bound.
struct LargestMicroBatch {
  int64_t value = 0;
  bool at_limit = false;
};
LargestMicroBatch largest_micro_batch(const ResolvedWorkload& w, const ResolvedRun& run,
                                      size_t recipe);

// The configuration one run records in the store: one workload under one recipe, with the
// model's dimensions, the recipe's GEMM specs and the memory plan spelled out.
nlohmann::json run_config_json(const ResolvedRun& run, const ResolvedWorkload& workload,
                               size_t recipe_index);

void to_json(nlohmann::json& json, const RunConfig& config);
void from_json(const nlohmann::json& json, RunConfig& config);

}  // namespace lpbench::config
