#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/config/run_config.h"
#include "harness/errors.h"

namespace lpbench::config {
namespace {

std::string error_of(const RunConfig& config) {
  try {
    resolve(config);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

RunConfig cpu_config() {
  RunConfig c;
  c.device = "cpu";
  return c;
}

TEST(Resolve, FillsTheModelsDefaults) {
  const ResolvedRun run = resolve(cpu_config());
  EXPECT_EQ(run.model.name, "tiny");
  EXPECT_EQ(run.recipes.size(), 2U);
  EXPECT_EQ(run.training.micro_batch, run.model.default_micro_batch);
  EXPECT_EQ(run.training.seq_len, run.model.default_seq_len);
  EXPECT_DOUBLE_EQ(run.training.lr, run.model.default_lr);
  EXPECT_EQ(run.timing_warmup_steps, 10);
  EXPECT_TRUE(run.device.is_cpu());
}

TEST(Resolve, NamesTheProblemAndTheValidChoices) {
  RunConfig c = cpu_config();
  c.workload = "model:gpt-9";
  EXPECT_NE(error_of(c).find("unknown model 'gpt-9'"), std::string::npos);
  EXPECT_NE(error_of(c).find("valid models: tiny"), std::string::npos);
  c = cpu_config();
  c.workload = "planet:tiny";
  EXPECT_NE(error_of(c).find("valid levels: model"), std::string::npos);
  c = cpu_config();
  c.recipes = {"bf16", "int3"};
  EXPECT_NE(error_of(c).find("valid recipes: bf16, int8-tensor"), std::string::npos);
  c = cpu_config();
  c.recipes = {"bf16", "bf16"};
  EXPECT_NE(error_of(c).find("twice"), std::string::npos);
  c = cpu_config();
  c.recipes = {};
  EXPECT_NE(error_of(c).find("no recipe"), std::string::npos);
  c = cpu_config();
  c.device = "tpu";
  EXPECT_NE(error_of(c).find("unknown --device"), std::string::npos);
  c = cpu_config();
  c.data = "wikipedia";
  EXPECT_NE(error_of(c).find("unknown --data"), std::string::npos);
}

TEST(Resolve, RejectsAbsurdSizes) {
  for (int64_t steps : {0L, -5L, 1'000'000'000'000L}) {
    RunConfig c = cpu_config();
    c.steps = steps;
    EXPECT_NE(error_of(c).find("--steps must be between"), std::string::npos) << steps;
  }
  RunConfig c = cpu_config();
  c.micro_batch = -1;
  EXPECT_NE(error_of(c).find("--micro-batch"), std::string::npos);
  c = cpu_config();
  c.micro_batch = 1 << 20;
  c.seq_len = 1 << 20;
  EXPECT_NE(error_of(c).find("tokens per step"), std::string::npos);
  c = cpu_config();
  c.warmup_steps = 200;
  EXPECT_NE(error_of(c).find("--warmup-steps"), std::string::npos);
  c = cpu_config();
  c.lr = -1;
  EXPECT_NE(error_of(c).find("--lr"), std::string::npos);
}

TEST(RunConfigJson, RoundTripsAndRecordsTheResolvedRun) {
  RunConfig c = cpu_config();
  c.steps = 42;
  c.recipes = {"int8-tensor"};
  c.interleave = false;
  const nlohmann::json json = c;
  const RunConfig back = json.get<RunConfig>();
  EXPECT_EQ(back.steps, 42);
  EXPECT_EQ(back.recipes, c.recipes);
  EXPECT_FALSE(back.interleave);

  const ResolvedRun run = resolve(c);
  const nlohmann::json recorded = run_config_json(run, run.recipes[0]);
  EXPECT_EQ(recorded["recipe"]["name"], "int8-tensor");
  EXPECT_EQ(recorded["recipe"]["wgrad"], "int8/tensor");
  EXPECT_EQ(recorded["recipe"]["keep_bf16"].size(), 2U);
  EXPECT_EQ(recorded["model"]["hidden_size"], run.model.hidden_size);
  EXPECT_EQ(recorded["training"]["steps"], 42);
  EXPECT_EQ(recorded["device"], "cpu");
}

}  // namespace
}  // namespace lpbench::config
