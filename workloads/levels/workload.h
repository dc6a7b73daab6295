#pragma once

#include <torch/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/recipe.h"
#include "workloads/models/model_config.h"

namespace lpbench::workloads {

// How much of a model one measurement covers.
enum class Level { model };

// "<level>:<model>", for example "model:tiny".
struct WorkloadSpec {
  Level level = Level::model;
  std::string model;
  std::string text() const;
};

// Throws std::invalid_argument with a message naming what is wrong and the valid choices.
WorkloadSpec parse_workload(std::string_view text);
std::vector<std::string> level_names();
std::string_view to_string(Level level);

// The training side of a workload: sizes, seed and the optimizer's fixed schedule (AdamW, linear
// warm-up then cosine decay to min_lr_ratio·lr, gradient clipping).
struct TrainingOptions {
  int64_t micro_batch = 0;
  int64_t seq_len = 0;
  uint64_t seed = 0;
  int64_t total_steps = 0;
  double lr = 0.0;
  int64_t lr_warmup_steps = 0;
  double min_lr_ratio = 0.1;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;
};

// The learning rate at `step` (0-based) under the options' schedule.
double learning_rate_at(int64_t step, const TrainingOptions& options);

struct StepOutput {
  double loss = 0.0;
  double grad_norm = 0.0;  // before clipping
  double lr = 0.0;
  int64_t tokens = 0;
};

// One workload under one recipe, ready to train step by step.
class Workload {
 public:
  virtual ~Workload() = default;
  // One training step: forward, backward and optimizer. Returns when the loss is known.
  virtual StepOutput step(int64_t index) = 0;
  virtual int64_t tokens_per_step() const = 0;
  // What the recipe did to each module, for the store.
  virtual const std::vector<kernels::ModuleDecision>& modules() const = 0;
  virtual std::string data_description() const = 0;
};

std::unique_ptr<Workload> make_workload(const WorkloadSpec& spec, const ModelConfig& model,
                                        const kernels::Recipe& recipe,
                                        const TrainingOptions& options,
                                        const torch::Device& device);

}  // namespace lpbench::workloads
