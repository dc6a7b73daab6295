#pragma once

#include <torch/types.h>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/recipe.h"
#include "workloads/levels/memory_plan.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace lpbench::config {

// What `lpbench run` was asked for, as the command line gives it. Zero means "the default":
// the model's size, depth and learning rate, or a share of the steps.
struct RunConfig {
  std::vector<std::string> workloads{"model:tiny"};
  std::vector<std::string> recipes{"bf16", "int8-tensor"};
  std::string model;   // replaces every workload's model (a name or a config.json)
  int64_t layers = 0;  // model level: the depth to build (full width)
  int64_t steps = 200;
  int64_t warmup_steps = -1;  // steps left out of the timing statistics; -1: min(10, steps / 10)
  uint64_t seed = 0;
  int64_t micro_batch = 0;
  int64_t seq_len = 0;
  double lr = 0.0;
  bool activation_checkpointing = false;
  std::string data = "synthetic";  // synthetic, a prepared directory, or a token file
  std::string token_dtype = "uint16";
  int64_t eval_every = -1;  // validation every N steps (model level); -1: steps / 10; 0: never
  int64_t eval_batches = 4;
  int64_t metrics_every = 10;   // per-step figures (expert loads) every N steps; 0: never
  std::string device = "auto";  // auto, cpu, cuda, cuda:N
  std::string db = "lpbench.db";
  std::string label;                   // a sweep label, e.g. "nightly"
  bool regions = false;                // time the named regions with CUDA events, per step
  int64_t trace_step = -1;             // capture this step with torch's profiler; -1: none
  std::string int8_gemm = "cublaslt";  // GPU INT8 GEMM for tensor/row scales: cublaslt, lpbench,
                                       // wgmma (sm_90: also block scales),
                                       // torch (at::_int_mm, the stock baseline)
  bool memory_plan = true;  // refuse what cannot fit; off only to test the device's limit
  bool interleave = true;   // alternate recipes step by step, so machine drift hits all alike
};

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
};

// Throws InputError naming the first problem found and what to do about it. Touches nothing.
// A workload that cannot fit on the device is refused with the memory plan's estimate, the
// device's memory, and the largest --layers or --micro-batch that fits.
ResolvedRun resolve(const RunConfig& config);

// The configuration one run records in the store: one workload under one recipe, with the
// model's dimensions, the recipe's GEMM specs and the memory plan spelled out.
nlohmann::json run_config_json(const ResolvedRun& run, const ResolvedWorkload& workload,
                               size_t recipe_index);

void to_json(nlohmann::json& json, const RunConfig& config);
void from_json(const nlohmann::json& json, RunConfig& config);

}  // namespace lpbench::config
