#include "workloads/levels/workload.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "workloads/levels/model_level.h"

namespace lpbench::workloads {

std::string_view to_string(Level level) {
  switch (level) {
    case Level::model:
      return "model";
  }
  return "?";
}

std::vector<std::string> level_names() {
  return {std::string(to_string(Level::model))};
}

std::string WorkloadSpec::text() const {
  return fmt::format("{}:{}", to_string(level), model);
}

WorkloadSpec parse_workload(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    throw std::invalid_argument(fmt::format(
        "workload '{}' is not of the form <level>:<model> (for example model:tiny)", text));
  }
  const std::string_view level = text.substr(0, colon);
  WorkloadSpec spec;
  spec.model = std::string(text.substr(colon + 1));
  if (level == "model") {
    spec.level = Level::model;
  } else {
    throw std::invalid_argument(fmt::format("unknown level '{}' in workload '{}'; valid levels: {}",
                                            level, text, fmt::join(level_names(), ", ")));
  }
  return spec;
}

double learning_rate_at(int64_t step, const TrainingOptions& o) {
  if (o.lr_warmup_steps > 0 && step < o.lr_warmup_steps) {
    return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.lr_warmup_steps);
  }
  const int64_t decay_steps = std::max<int64_t>(1, o.total_steps - o.lr_warmup_steps);
  const double progress = std::min(
      1.0, static_cast<double>(step - o.lr_warmup_steps) / static_cast<double>(decay_steps));
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return o.lr * (o.min_lr_ratio + (1.0 - o.min_lr_ratio) * cosine);
}

std::unique_ptr<Workload> make_workload(const WorkloadSpec& spec, const ModelConfig& model,
                                        const kernels::Recipe& recipe,
                                        const TrainingOptions& options,
                                        const torch::Device& device) {
  switch (spec.level) {
    case Level::model:
      return std::make_unique<ModelLevel>(model, recipe, options, device);
  }
  throw std::logic_error("unknown level");
}

}  // namespace lpbench::workloads
