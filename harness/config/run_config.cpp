#include "harness/config/run_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

#include "harness/errors.h"

namespace lpbench::config {

namespace {

// Far beyond any real run, and small enough that products of sizes cannot overflow.
constexpr int64_t kMaxSteps = 100'000'000;
constexpr int64_t kMaxSize = 1 << 24;

void check_range(std::string_view flag, int64_t value, int64_t min, int64_t max) {
  if (value < min || value > max) {
    throw InputError(fmt::format("{} must be between {} and {}, got {}", flag, min, max, value));
  }
}

torch::Device resolve_device(const std::string& text) {
  if (text == "auto") {
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0)
                                       : torch::Device(torch::kCPU);
  }
  if (text == "cpu") return torch::Device(torch::kCPU);
  if (text == "cuda" || text.rfind("cuda:", 0) == 0) {
    if (!torch::cuda::is_available()) {
      throw InputError(fmt::format(
          "--device {}: no CUDA device is available here; use --device cpu or auto", text));
    }
    int64_t index = 0;
    if (text != "cuda") {
      try {
        size_t used = 0;
        index = std::stoll(text.substr(5), &used);
        if (used != text.size() - 5) throw std::invalid_argument(text);
      } catch (const std::exception&) {
        throw InputError(fmt::format("--device '{}' is not cuda:<index>", text));
      }
    }
    const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
    check_range("--device index", index, 0, count - 1);
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  throw InputError(
      fmt::format("unknown --device '{}'; valid: auto, cpu, cuda, cuda:<index>", text));
}

}  // namespace

ResolvedRun resolve(const RunConfig& config) {
  ResolvedRun run;
  run.config = config;
  try {
    run.workload = workloads::parse_workload(config.workload);
  } catch (const std::invalid_argument& error) {
    throw InputError(error.what());
  }
  try {
    run.model = workloads::builtin_model(run.workload.model);
  } catch (const std::out_of_range&) {
    throw InputError(fmt::format("unknown model '{}' in workload '{}'; valid models: {}",
                                 run.workload.model, config.workload,
                                 fmt::join(workloads::builtin_model_names(), ", ")));
  }

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
      run.recipes.push_back(kernels::recipe_by_name(name));
    } catch (const std::out_of_range&) {
      throw InputError(fmt::format("unknown recipe '{}'; valid recipes: {}", name,
                                   fmt::join(kernels::recipe_names(), ", ")));
    }
  }

  check_range("--steps", config.steps, 1, kMaxSteps);
  run.timing_warmup_steps =
      config.warmup_steps >= 0 ? config.warmup_steps : std::min<int64_t>(10, config.steps / 10);
  check_range("--warmup-steps", run.timing_warmup_steps, 0, config.steps - 1);
  check_range("--micro-batch", config.micro_batch, 0, kMaxSize);
  check_range("--seq-len", config.seq_len, 0, kMaxSize);
  if (!std::isfinite(config.lr) || config.lr < 0.0) {
    throw InputError(fmt::format("--lr must be a positive number, got {}", config.lr));
  }

  workloads::TrainingOptions& t = run.training;
  t.micro_batch = config.micro_batch > 0 ? config.micro_batch : run.model.default_micro_batch;
  t.seq_len = config.seq_len > 0 ? config.seq_len : run.model.default_seq_len;
  if (t.micro_batch * t.seq_len > kMaxSize) {
    throw InputError(fmt::format("--micro-batch × --seq-len = {} tokens per step exceeds {}",
                                 t.micro_batch * t.seq_len, kMaxSize));
  }
  if (config.data != "synthetic") {
    throw InputError(fmt::format("unknown --data '{}'; valid: synthetic", config.data));
  }
  t.seed = config.seed;
  t.total_steps = config.steps;
  t.lr = config.lr > 0.0 ? config.lr : run.model.default_lr;
  t.lr_warmup_steps = std::max<int64_t>(1, config.steps / 10);
  run.device = resolve_device(config.device);
  return run;
}

nlohmann::json run_config_json(const ResolvedRun& run, const kernels::Recipe& recipe) {
  const workloads::ModelConfig& m = run.model;
  const workloads::TrainingOptions& t = run.training;
  nlohmann::json recipe_json{
      {"name", recipe.name},
      {"fprop", kernels::describe(recipe.gemms.fprop)},
      {"dgrad", kernels::describe(recipe.gemms.dgrad)},
      {"wgrad", kernels::describe(recipe.gemms.wgrad)},
      {"keep_bf16", nlohmann::json::array()},
  };
  for (const kernels::KeepRule& rule : recipe.keep_bf16) {
    recipe_json["keep_bf16"].push_back({{"pattern", rule.pattern}, {"reason", rule.reason}});
  }
  return {
      {"workload", run.workload.text()},
      {"recipe", recipe_json},
      {"model",
       {{"name", m.name},
        {"vocab_size", m.vocab_size},
        {"hidden_size", m.hidden_size},
        {"intermediate_size", m.intermediate_size},
        {"num_layers", m.num_layers},
        {"num_heads", m.num_heads},
        {"num_kv_heads", m.num_kv_heads},
        {"head_dim", m.head_dim},
        {"rope_theta", m.rope_theta},
        {"norm_eps", m.norm_eps},
        {"tie_embeddings", m.tie_embeddings},
        {"parameters", m.parameter_count()},
        {"flops_per_token", m.flops_per_token(t.seq_len)}}},
      {"training",
       {{"micro_batch", t.micro_batch},
        {"seq_len", t.seq_len},
        {"seed", t.seed},
        {"steps", t.total_steps},
        {"optimizer", "adamw"},
        {"lr", t.lr},
        {"lr_schedule", "linear warm-up, cosine decay"},
        {"lr_warmup_steps", t.lr_warmup_steps},
        {"min_lr_ratio", t.min_lr_ratio},
        {"weight_decay", t.weight_decay},
        {"betas", {t.beta1, t.beta2}},
        {"grad_clip", t.grad_clip}}},
      {"data", run.config.data},
      {"timing_warmup_steps", run.timing_warmup_steps},
      {"device", run.device.str()},
      {"interleave", run.config.interleave},
  };
}

void to_json(nlohmann::json& json, const RunConfig& c) {
  json = {{"workload", c.workload},
          {"recipes", c.recipes},
          {"steps", c.steps},
          {"warmup_steps", c.warmup_steps},
          {"seed", c.seed},
          {"micro_batch", c.micro_batch},
          {"seq_len", c.seq_len},
          {"lr", c.lr},
          {"data", c.data},
          {"device", c.device},
          {"db", c.db},
          {"interleave", c.interleave}};
}

void from_json(const nlohmann::json& json, RunConfig& c) {
  const RunConfig defaults;
  c.workload = json.value("workload", defaults.workload);
  c.recipes = json.value("recipes", defaults.recipes);
  c.steps = json.value("steps", defaults.steps);
  c.warmup_steps = json.value("warmup_steps", defaults.warmup_steps);
  c.seed = json.value("seed", defaults.seed);
  c.micro_batch = json.value("micro_batch", defaults.micro_batch);
  c.seq_len = json.value("seq_len", defaults.seq_len);
  c.lr = json.value("lr", defaults.lr);
  c.data = json.value("data", defaults.data);
  c.device = json.value("device", defaults.device);
  c.db = json.value("db", defaults.db);
  c.interleave = json.value("interleave", defaults.interleave);
}

}  // namespace lpbench::config
