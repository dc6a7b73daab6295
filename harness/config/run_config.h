#pragma once

#include <torch/types.h>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/recipe.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace lpbench::config {

// What `lpbench run` was asked for, as the command line gives it. Zero means "the default":
// the model's size and learning rate, or a share of the steps.
struct RunConfig {
  std::string workload = "model:tiny";
  std::vector<std::string> recipes{"bf16", "int8-tensor"};
  int64_t steps = 200;
  int64_t warmup_steps = -1;  // steps left out of the timing statistics; -1: min(10, steps / 10)
  uint64_t seed = 0;
  int64_t micro_batch = 0;
  int64_t seq_len = 0;
  double lr = 0.0;
  std::string data = "synthetic";  // where training tokens come from
  std::string device = "auto";     // auto, cpu, cuda, cuda:N
  std::string db = "lpbench.db";
  bool interleave = true;  // alternate recipes step by step, so machine drift hits all alike
};

// A RunConfig checked and filled in: everything the runner needs, with no defaults left open.
struct ResolvedRun {
  RunConfig config;
  workloads::WorkloadSpec workload;
  workloads::ModelConfig model;
  std::vector<kernels::Recipe> recipes;
  workloads::TrainingOptions training;
  torch::Device device{torch::kCPU};
  int64_t timing_warmup_steps = 0;
};

// Throws InputError naming the first problem found and what to do about it. Touches nothing.
ResolvedRun resolve(const RunConfig& config);

// The configuration one run records in the store: the resolved run narrowed to one recipe, with
// the model's dimensions and the recipe's GEMM specs spelled out.
nlohmann::json run_config_json(const ResolvedRun& run, const kernels::Recipe& recipe);

void to_json(nlohmann::json& json, const RunConfig& config);
void from_json(const nlohmann::json& json, RunConfig& config);

}  // namespace lpbench::config
