#include "harness/config/run_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "base/errors.h"
#include "kernels/int8_backend.h"
#include "kernels/recipe.h"

namespace lpbench::config {

namespace {

// Far beyond any real run, and small enough that products of sizes cannot overflow.
constexpr int64_t kMaxSteps = 100'000'000;
constexpr int64_t kMaxSize = 1 << 24;

}  // namespace

void check_range(std::string_view flag, int64_t value, int64_t min, int64_t max,
                 std::string_view zero_means) {
  if (value < min || value > max) {
    const std::string low =
        zero_means.empty() ? std::to_string(min) : fmt::format("{} ({})", min, zero_means);
    throw InputError(fmt::format("{} must be between {} and {}, got {}", flag, low, max, value));
  }
}

void check_run_options(const RunConfig& config) {
  if (config.recipes.empty()) {
    throw InputError(fmt::format("no recipe given; pass --recipes with some of: {}",
                                 fmt::join(kernels::recipe_names(), ", ")));
  }
  std::set<std::string> seen;
  for (const std::string& name : config.recipes) {
    if (!seen.insert(name).second) {
      throw InputError(fmt::format("recipe '{}' is given twice in --recipes", name));
    }
    try {
      kernels::parse_recipe(name);
    } catch (const std::invalid_argument& error) {
      throw InputError(error.what());
    }
  }

  check_range("--steps", config.steps, 1, kMaxSteps);
  const int64_t warmup =
      config.warmup_steps >= 0 ? config.warmup_steps : std::min<int64_t>(10, config.steps / 10);
  check_range("--warmup-steps", warmup, 0, config.steps - 1);
  check_range("--micro-batch", config.micro_batch, 0, kMaxSize, "the model's");
  check_range("--seq-len", config.seq_len, 0, kMaxSize, "the model's");
  check_range("--grad-accum", config.grad_accum, 1, 1 << 16);
  check_range("--layers", config.layers, 0, 1 << 16, "all");
  check_range("--eval-batches", config.eval_batches, 1, 1 << 16);
  check_range("--eval-every", config.eval_every, -1, kMaxSteps);
  check_range("--metrics-every", config.metrics_every, 0, kMaxSteps);
  check_range("--nproc-per-node", config.nproc_per_node, 1, 1024);
  check_range("--dist-timeout", config.dist_timeout_s, 1, 24 * 3600);
  check_range("--diagnostics", config.diagnostics_every, 0, kMaxSteps);
  check_range("--trace-step", config.trace_step, -1, config.steps - 1);
  check_range("--memory-snapshot", config.memory_snapshot_step, -1, config.steps - 1);
  if (!kernels::int8_backend_named(config.int8_gemm)) {
    throw InputError(fmt::format("unknown --int8-gemm '{}'; valid: {}", config.int8_gemm,
                                 kernels::kInt8GemmNames));
  }
  if (!std::isfinite(config.lr) || config.lr < 0.0) {
    throw InputError(
        fmt::format("--lr must be a positive number (0: the model's), got {}", config.lr));
  }
  if (!std::isfinite(config.memory_budget_gib) || config.memory_budget_gib < 0.0) {
    throw InputError(fmt::format(
        "--memory-budget-gib must be a positive number of GiB (0: the device's memory), got {}",
        config.memory_budget_gib));
  }
  if (config.fusion != "auto" && config.fusion != "fused" && config.fusion != "none") {
    throw InputError(fmt::format("unknown --fusion '{}'; valid: auto (fused on a GPU), fused, none",
                                 config.fusion));
  }
  if (config.workloads.empty()) throw InputError("no workload given; pass --workload");
}

}  // namespace lpbench::config
