#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "harness/config/run_config.h"

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
  ASSERT_EQ(run.workloads.size(), 1U);
  const ResolvedWorkload& w = run.workloads[0];
  EXPECT_EQ(w.model.name, "tiny");
  EXPECT_EQ(run.recipes.size(), 2U);
  EXPECT_EQ(w.training.micro_batch, w.model.default_micro_batch);
  EXPECT_EQ(w.training.seq_len, w.model.default_seq_len);
  EXPECT_DOUBLE_EQ(w.training.lr, w.model.default_lr);
  EXPECT_EQ(w.memory.size(), 2U);
  EXPECT_TRUE(w.interleave);
  EXPECT_EQ(run.eval_every, 20);
  EXPECT_EQ(run.timing_warmup_steps, 10);
  EXPECT_TRUE(run.device.is_cpu());
}

TEST(Resolve, NamesTheProblemAndTheValidChoices) {
  RunConfig c = cpu_config();
  c.workloads = {"model:gpt-9"};
  EXPECT_NE(error_of(c).find("unknown model 'gpt-9'"), std::string::npos);
  EXPECT_NE(error_of(c).find("valid models: llama2-7b, llama2-13b"), std::string::npos);
  c = cpu_config();
  c.workloads = {"planet:tiny"};
  EXPECT_NE(error_of(c).find("valid levels: gemm, linear, layer, model"), std::string::npos);
  c = cpu_config();
  c.layers = 3;
  c.workloads = {"layer:tiny"};
  EXPECT_NE(error_of(c).find("--layers applies to model-level workloads"), std::string::npos);
  c.workloads = {"layer:llama2-7b", "model:llama2-7b"};  // applies to the model level only
  c.seq_len = 128;
  c.layers = 2;
  const ResolvedRun both = resolve(c);
  EXPECT_EQ(both.workloads[0].model.num_layers, 32);
  EXPECT_EQ(both.workloads[1].model.num_layers, 2);
  EXPECT_EQ(both.workloads[1].model.published_layers, 32);
  c = cpu_config();
  c.layers = 9;
  EXPECT_NE(error_of(c).find("--layers must be between 1 and 4"), std::string::npos);
  c = cpu_config();
  c.workloads = {"layer:tiny"};
  c.data = "/dev/null";
  EXPECT_NE(error_of(c).find("--data applies to the model level"), std::string::npos);
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
  EXPECT_NE(error_of(c).find("--data 'wikipedia': no such file"), std::string::npos);
  c = cpu_config();
  c.int8_gemm = "cutlass";
  EXPECT_NE(error_of(c).find("unknown --int8-gemm 'cutlass'; valid: auto, cublaslt, lpbench, "
                             "torch, wgmma"),
            std::string::npos);
}

// Delayed scaling keeps a layer's history across steps: the gemm level (no layers) and separate
// layout passes (two records a step) are refused, saying why; the layer level takes it.
TEST(Resolve, DelayedScalingNeedsTrainingStepsAndTheSharedQuantization) {
  RunConfig c = cpu_config();
  c.workloads = {"gemm:tiny"};
  c.recipes = {"bf16", "int8-tensor:amax-history=8"};
  EXPECT_NE(error_of(c).find("use a linear, layer or model workload, not gemm:tiny"),
            std::string::npos);
  c.workloads = {"layer:tiny"};
  c.separate_layout_quantize = true;
  EXPECT_NE(error_of(c).find("without --separate-layout-quantize"), std::string::npos);
  c.separate_layout_quantize = false;
  EXPECT_EQ(resolve(c).recipes[1].gemms.fprop.amax_history, 8);
}

// saved=int8 lives in the fused operators: a layer or model run without them is refused, saying
// how to run it; the linear level (its W made again in backward) takes either set.
TEST(Resolve, SavedInt8NeedsTheFusedOperators) {
  RunConfig c = cpu_config();
  c.workloads = {"layer:tiny"};
  c.recipes = {"bf16", "int8-dataflow"};
  EXPECT_NE(error_of(c).find("recipe 'int8-dataflow' keeps the activations saved for backward"),
            std::string::npos);
  EXPECT_NE(error_of(c).find("add --fusion fused"), std::string::npos);
  c.fusion = "fused";
  EXPECT_EQ(resolve(c).recipes[1].saved, kernels::SavedActivations::int8);
  c.fusion = "none";
  c.workloads = {"linear:tiny:down"};
  EXPECT_EQ(error_of(c), "");
}

TEST(Resolve, TheInt8GemmDefaultsToAutoAndTakesEveryNamedBackend) {
  EXPECT_EQ(RunConfig{}.int8_gemm, "auto");
  for (const char* name : {"auto", "cublaslt", "lpbench", "torch", "wgmma"}) {
    RunConfig c = cpu_config();
    c.int8_gemm = name;
    EXPECT_EQ(error_of(c), "") << name;
  }
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
  c.separate_layout_quantize = true;
  c.workloads = {"model:tiny", "layer:tiny"};
  const nlohmann::json json = c;
  const RunConfig back = json.get<RunConfig>();
  EXPECT_EQ(back.steps, 42);
  EXPECT_EQ(back.recipes, c.recipes);
  EXPECT_EQ(back.workloads, c.workloads);
  EXPECT_FALSE(back.interleave);
  EXPECT_TRUE(back.separate_layout_quantize);
  EXPECT_FALSE(RunConfig{}.separate_layout_quantize);

  const ResolvedRun run = resolve(c);
  const nlohmann::json recorded = run_config_json(run, run.workloads[0], 0);
  EXPECT_EQ(recorded["recipe"]["name"], "int8-tensor");
  EXPECT_EQ(recorded["recipe"]["wgrad"], "int8/tensor");
  EXPECT_EQ(recorded["recipe"]["keep_bf16"].size(), 3U);  // embedding, output, router
  EXPECT_EQ(recorded["model"]["hidden_size"], run.workloads[0].model.hidden_size);
  EXPECT_EQ(recorded["training"]["steps"], 42);
  EXPECT_EQ(recorded["device"], "cpu");
  EXPECT_GT(recorded["memory_plan"]["total_gib"].get<double>(), 0.0);
  EXPECT_EQ(recorded["model"]["published_layers"], 4);
  EXPECT_EQ(recorded["separate_layout_quantize"], true);
}

TEST(MemoryPlan, RefusesWhatCannotFitAndItsSuggestionFits) {
  RunConfig c = cpu_config();
  c.workloads = {"model:llama2-13b"};
  c.recipes = {"bf16"};
  c.seq_len = 512;
  const ResolvedRun small = resolve(cpu_config());
  if (small.device_memory_gib > 200) GTEST_SKIP() << "this machine could hold Llama2-13B";
  const std::string error = error_of(c);
  EXPECT_NE(error.find("model:llama2-13b under bf16 needs about"), std::string::npos) << error;
  EXPECT_NE(error.find("GiB (weights"), std::string::npos) << error;
  const std::string marker = "the largest --layers that fits is ";
  const size_t at = error.find(marker);
  ASSERT_NE(at, std::string::npos) << error;
  const int64_t layers = std::stoll(error.substr(at + marker.size()));
  ASSERT_GT(layers, 0);
  c.layers = layers;
  const ResolvedRun fits = resolve(c);  // the suggestion fits
  EXPECT_LE(fits.workloads[0].memory[0].total_gib(), fits.device_memory_gib);
  c.layers = layers + 1;
  EXPECT_NE(error_of(c).find("needs about"), std::string::npos);  // and is the largest
}

// A model that fits only with activation checkpointing gets it, and the plan says so; one that
// fits only with a smaller micro-batch too gets that where the micro-batch was the model's
// default, never where the user gave one.
TEST(MemoryPlan, TurnsOnCheckpointingAndLowersADefaultMicroBatchWhereThatMakesItFit) {
  const workloads::ModelConfig& m = workloads::builtin_model("small");
  const auto spec = workloads::parse_workload("model:small");
  const kernels::Recipe bf16 = kernels::recipe_by_name("bf16");
  const auto estimate = [&](int64_t micro_batch, bool checkpointing) {
    workloads::TrainingOptions o;
    o.micro_batch = micro_batch;
    o.seq_len = m.default_seq_len;
    o.activation_checkpointing = checkpointing;
    return workloads::estimate_memory(spec, m, bf16, o).total_gib();
  };
  const int64_t batch = m.default_micro_batch;
  const double plain = estimate(batch, false);
  const double checkpointed = estimate(batch, true);
  const double at_one = estimate(1, true);
  ASSERT_LT(checkpointed, plain);
  ASSERT_LT(at_one, checkpointed);
  if (resolve(cpu_config()).device_memory_gib < plain) GTEST_SKIP() << "too little memory here";

  RunConfig c = cpu_config();
  c.workloads = {"model:small"};
  c.recipes = {"bf16"};
  c.micro_batch = batch;  // given
  c.memory_budget_gib = (plain + checkpointed) / 2;
  const ResolvedRun fits = resolve(c);
  EXPECT_TRUE(fits.workloads[0].training.activation_checkpointing);
  EXPECT_EQ(fits.workloads[0].training.micro_batch, batch);
  EXPECT_NE(fits.workloads[0].plan_note.find("activation checkpointing on"), std::string::npos);
  EXPECT_LE(fits.workloads[0].memory[0].total_gib(), c.memory_budget_gib);
  EXPECT_EQ(run_config_json(fits, fits.workloads[0], 0)["training"]["activation_checkpointing"],
            true);

  // Below what checkpointing alone needs: a given micro-batch is refused, the default lowered.
  c.memory_budget_gib = (at_one + checkpointed) / 2;
  EXPECT_NE(error_of(c).find("needs about"), std::string::npos);
  c.micro_batch = 0;
  const ResolvedRun lowered = resolve(c);
  const workloads::TrainingOptions& t = lowered.workloads[0].training;
  EXPECT_TRUE(t.activation_checkpointing);
  EXPECT_GE(t.micro_batch, 1);
  EXPECT_LT(t.micro_batch, batch);
  EXPECT_NE(lowered.workloads[0].plan_note.find("micro-batch"), std::string::npos)
      << lowered.workloads[0].plan_note;
  EXPECT_LE(lowered.workloads[0].memory[0].total_gib(), c.memory_budget_gib);
}

// Each ZeRO stage holds less a rank than the one before: at Llama2-13B's full depth on two ranks,
// stage 1 cannot fit one H200 (139 GiB) and stage 3 can. --sharding auto takes the least stage
// that fits (zero2 with a tenth of the memory to spare), and says so; a stage named off data
// parallel, or an unknown one, is refused.
TEST(MemoryPlan, ShardingStagesHoldLessAndAutoTakesTheLeastThatFits) {
  const auto spec = workloads::parse_workload("model:llama2-13b");
  const workloads::ModelConfig& m = workloads::builtin_model("llama2-13b");
  const kernels::Recipe bf16 = kernels::recipe_by_name("bf16");
  workloads::TrainingOptions o;
  o.micro_batch = 1;
  o.seq_len = 4096;
  o.activation_checkpointing = true;
  o.data_parallel_size = 2;
  auto total = [&](workloads::Sharding stage) {
    workloads::TrainingOptions t = o;
    t.sharding = stage;
    return workloads::estimate_memory(spec, m, bf16, t).total_gib();
  };
  const double zero1 = total(workloads::Sharding::zero1);
  const double zero2 = total(workloads::Sharding::zero2);
  const double zero3 = total(workloads::Sharding::zero3);
  EXPECT_GT(zero1, zero2);
  EXPECT_GT(zero2, zero3);
  EXPECT_GT(zero1, 139.0);
  EXPECT_LT(zero3, 139.0);
  // The persistent state of stage 3 is 16 bytes a parameter over the ranks, about.
  const double params = static_cast<double>(m.parameter_count());
  EXPECT_GT(zero3, 16.0 * params / 2 / (1 << 30));

  RunConfig c = cpu_config();
  c.workloads = {"model:small"};
  c.recipes = {"bf16"};
  c.micro_batch = 2;
  c.world_size = 2;
  c.nproc_per_node = 2;
  const ResolvedRun as_asked = resolve(c);
  const auto& w = as_asked.workloads[0];
  EXPECT_EQ(w.training.sharding, workloads::Sharding::zero1);
  EXPECT_EQ(*sharding_of(as_asked, w), "zero1 (gloo)");
  const auto small = workloads::builtin_model("small");
  const auto small_spec = workloads::parse_workload("model:small");
  auto small_total = [&](workloads::Sharding stage, bool checkpointing) {
    workloads::TrainingOptions t = w.training;
    t.sharding = stage;
    t.activation_checkpointing = checkpointing;
    return workloads::estimate_memory(small_spec, small, bf16, t).total_gib();
  };
  const double plain = small_total(workloads::Sharding::zero1, false);
  const double stage2 = small_total(workloads::Sharding::zero2, true);
  const double stage3 = small_total(workloads::Sharding::zero3, true);
  ASSERT_GT(plain, stage2);
  ASSERT_GT(stage2, stage3);
  if (as_asked.device_memory_gib < plain) GTEST_SKIP() << "too little memory here";
  // zero2 where it fits with a tenth to spare.
  c.memory_budget_gib = stage2 / 0.85;
  ASSERT_LT(c.memory_budget_gib, plain);
  const ResolvedRun two = resolve(c);
  EXPECT_EQ(two.workloads[0].training.sharding, workloads::Sharding::zero2);
  EXPECT_TRUE(two.workloads[0].training.activation_checkpointing);
  EXPECT_NE(two.workloads[0].plan_note.find("sharding zero2"), std::string::npos)
      << two.workloads[0].plan_note;
  EXPECT_EQ(run_config_json(two, two.workloads[0], 0)["training"]["data_parallel"]["sharding"],
            "zero2 (gloo)");
  c.memory_budget_gib = (stage2 + stage3) / 2;
  const ResolvedRun three = resolve(c);
  EXPECT_EQ(three.workloads[0].training.sharding, workloads::Sharding::zero3);
  EXPECT_LE(three.workloads[0].memory[0].total_gib(), c.memory_budget_gib);

  c.memory_budget_gib = 0.0;
  c.sharding = "zero4";
  EXPECT_NE(error_of(c).find("unknown --sharding 'zero4'"), std::string::npos) << error_of(c);
  c.sharding = "zero3";
  const ResolvedRun named = resolve(c);
  EXPECT_EQ(named.workloads[0].training.sharding, workloads::Sharding::zero3);
  EXPECT_TRUE(named.workloads[0].training.activation_checkpointing);
  c.world_size = 0;
  c.nproc_per_node = 1;
  EXPECT_NE(error_of(c).find("--sharding zero3 applies to data parallel runs"), std::string::npos)
      << error_of(c);
}

// Where the model does not fit as asked, the plan recomputes the fewest layers that make it fit;
// fused, where recomputing every layer is not enough, it makes the recomputed layers' BF16 copies
// per layer too. One process frees the activations as backward makes the gradients, so at full
// depth and 4096 tokens the peak is the gradients' (the end of backward), which recomputation does
// not lower: on one H200 (139.4 GiB usable) Llama2-7B, Llama3.1-8B and Qwen3-8B fit as they are
// (Qwen3-8B since the embedding keeps no BF16 copy and its gradient is kept by rows: 2.3 and
// 1.2 GiB less; docs/perf-log.md §64), and with a dense embedding gradient recomputing every layer
// lowers nothing. What the user chose to recompute stays, and a bad --checkpoint-layers is
// refused.
TEST(MemoryPlan, RecomputesTheFewestLayersThatFitAndMakesCopiesPerLayerBeyond) {
  const kernels::Recipe bf16 = kernels::recipe_by_name("bf16");
  auto full_depth = [&](const char* name, int64_t recomputed, bool per_layer, bool by_rows = true) {
    workloads::TrainingOptions o;
    o.embedding_gradient_by_rows = by_rows;
    o.micro_batch = 1;
    o.seq_len = 4096;
    o.fusion = workloads::Fusion::fused;
    o.activation_checkpointing = recomputed > 0;
    o.checkpointed_layers = recomputed;
    o.copies_per_layer = per_layer;
    return workloads::estimate_memory(workloads::parse_workload(std::string("model:") + name),
                                      workloads::builtin_model(name), bf16, o);
  };
  constexpr double kH200 = 139.4;
  for (const char* name : {"llama2-7b", "llama3.1-8b", "qwen3-8b"}) {
    const workloads::MemoryEstimate as_is = full_depth(name, 0, false);
    EXPECT_GT(as_is.gradients_gib, as_is.activations_gib) << name;
  }
  EXPECT_LT(full_depth("llama2-7b", 0, false).total_gib(), kH200);
  EXPECT_LT(full_depth("llama3.1-8b", 0, false).total_gib(), kH200);
  EXPECT_LT(full_depth("qwen3-8b", 0, false).total_gib(), kH200);
  // The gradients' peak: a dense embedding gradient adds its table, and recomputation does not
  // lower it.
  const double dense = full_depth("qwen3-8b", 0, false, false).total_gib();
  EXPECT_NEAR(dense - full_depth("qwen3-8b", 0, false).total_gib(),
              4.0 * 151936 * 4096 / (1 << 30) - 4.0 * 4096 * 4096 / (1 << 30), 1e-9);
  EXPECT_GE(full_depth("qwen3-8b", 36, false, false).total_gib(), dense);
  // The copies made per layer: those of the layers not recomputed and of the one running.
  EXPECT_LT(full_depth("qwen3-8b", 36, true).total_gib(),
            full_depth("qwen3-8b", 8, true).total_gib());

  RunConfig c = cpu_config();
  c.workloads = {"model:small"};
  c.recipes = {"bf16"};
  c.fusion = "fused";
  c.micro_batch = 8;  // activations weigh more than the gradients
  const ResolvedRun as_asked = resolve(c);
  workloads::TrainingOptions t = as_asked.workloads[0].training;
  const auto small = workloads::builtin_model("small");
  const auto spec = workloads::parse_workload("model:small");
  auto estimate = [&](int64_t recomputed, bool per_layer) {
    workloads::TrainingOptions trial = t;
    trial.activation_checkpointing = recomputed > 0;
    trial.checkpointed_layers = recomputed;
    trial.copies_per_layer = per_layer;
    return workloads::estimate_memory(spec, small, bf16, trial).total_gib();
  };
  const int64_t layers = small.num_layers;
  const double plain = estimate(0, false);
  if (as_asked.device_memory_gib < plain) GTEST_SKIP() << "too little memory here";
  EXPECT_FALSE(t.activation_checkpointing);

  // Between what 4 and 5 recomputed layers need: 5 of them, copies kept.
  c.memory_budget_gib = (estimate(4, false) + estimate(5, false)) / 2;
  const ResolvedRun some = resolve(c);
  const workloads::TrainingOptions& s = some.workloads[0].training;
  EXPECT_EQ(workloads::recomputed_layers(s, layers), 5);
  EXPECT_FALSE(s.copies_per_layer);
  EXPECT_NE(some.workloads[0].plan_note.find("the first 5 of 12 layers recomputed"),
            std::string::npos)
      << some.workloads[0].plan_note;
  EXPECT_EQ(run_config_json(some, some.workloads[0], 0)["training"]["checkpointed_layers"], 5);

  // Below what every layer recomputed needs with copies kept: copies made per layer, and again
  // the fewest recomputed layers that fit.
  const double all_kept = estimate(layers, false);
  ASSERT_LT(estimate(layers, true), all_kept);
  c.memory_budget_gib = (estimate(layers, true) + all_kept) / 2;
  const ResolvedRun per_layer = resolve(c);
  const workloads::TrainingOptions& p = per_layer.workloads[0].training;
  const int64_t k = workloads::recomputed_layers(p, layers);
  EXPECT_TRUE(p.copies_per_layer);
  EXPECT_GE(k, 1);
  EXPECT_LE(per_layer.workloads[0].memory[0].total_gib(), c.memory_budget_gib);
  if (k > 1) {
    EXPECT_GT(estimate(k - 1, true), c.memory_budget_gib);
  }
  EXPECT_NE(per_layer.workloads[0].plan_note.find("BF16 weight copies made per layer"),
            std::string::npos)
      << per_layer.workloads[0].plan_note;
  EXPECT_EQ(run_config_json(per_layer, per_layer.workloads[0], 0)["training"]["weight_copies"],
            "per layer where recomputed");

  // Layers the user chose to recompute stay so; the plan adds copies per layer only.
  c.checkpoint_layers = layers;
  const ResolvedRun chosen = resolve(c);
  EXPECT_EQ(workloads::recomputed_layers(chosen.workloads[0].training, layers), layers);
  EXPECT_TRUE(chosen.workloads[0].training.copies_per_layer);

  c.memory_budget_gib = 0.0;
  c.checkpoint_layers = layers + 1;
  EXPECT_NE(error_of(c).find("--checkpoint-layers must be between 1 and 12, got 13"),
            std::string::npos)
      << error_of(c);
  c.checkpoint_layers = 3;
  c.workloads = {"layer:small"};
  EXPECT_NE(error_of(c).find("--checkpoint-layers applies to model-level workloads"),
            std::string::npos)
      << error_of(c);
  c.workloads = {"model:small"};
  c.world_size = 2;
  c.nproc_per_node = 2;
  c.sharding = "zero3";
  EXPECT_NE(error_of(c).find("--sharding zero3 recomputes every layer"), std::string::npos)
      << error_of(c);
}

TEST(MemoryPlan, FollowsWhatTheRecipeSaves) {
  const workloads::ModelConfig& m = workloads::builtin_model("llama2-7b");
  workloads::TrainingOptions o;
  o.micro_batch = 1;
  o.seq_len = 4096;
  const auto spec = workloads::parse_workload("layer:llama2-7b");
  const auto bf16 = workloads::estimate_memory(spec, m, kernels::recipe_by_name("bf16"), o);
  const auto int8 = workloads::estimate_memory(spec, m, kernels::recipe_by_name("int8-tensor"), o);
  EXPECT_LT(int8.activations_gib, bf16.activations_gib);  // INT8 inputs saved for backward
  EXPECT_LT(int8.weight_copies_gib, bf16.weight_copies_gib);
  EXPECT_DOUBLE_EQ(int8.weights_gib, bf16.weights_gib);
  o.micro_batch = 2;
  EXPECT_GT(workloads::estimate_memory(spec, m, kernels::recipe_by_name("bf16"), o).activations_gib,
            1.9 * bf16.activations_gib);
  const auto model_spec = workloads::parse_workload("model:llama2-7b");
  workloads::TrainingOptions ckpt = o;
  ckpt.activation_checkpointing = true;
  EXPECT_LT(
      workloads::estimate_memory(model_spec, m.with_layers(4), kernels::recipe_by_name("bf16"),
                                 ckpt)
          .activations_gib,
      workloads::estimate_memory(model_spec, m.with_layers(4), kernels::recipe_by_name("bf16"), o)
          .activations_gib);
}

// saved=int8 (fused): the norms' inputs, the rotated qkv and SwiGLU's input kept as INT8 with a
// scale per 128, attention's output and log-sum-exp not kept at all, and no saved W copies.
TEST(MemoryPlan, SavedInt8KeepsInt8BlocksAndNoWeightCopies) {
  const workloads::ModelConfig& m = workloads::builtin_model("llama2-7b");
  const kernels::Recipe& block = kernels::recipe_by_name("int8-block");
  const kernels::Recipe& dataflow = kernels::recipe_by_name("int8-dataflow");
  const double h = 4096, q = 4096, kv = 4096, f = 11008, heads = 32;
  const double saved_bf16_minus_int8 = 2 * (2 * h - (h + 4 * h / 128)) +  // the two norms
                                       (2 * (q + 2 * kv) + 2 * q + 4 * heads) -
                                       ((q + 2 * kv) + 4 * (q + 2 * kv) / 128) +  // attention
                                       (4 * f - (2 * f + 4 * 172));               // SwiGLU's input
  EXPECT_DOUBLE_EQ(workloads::activation_bytes_per_token(m, block, workloads::Fusion::fused) -
                       workloads::activation_bytes_per_token(m, dataflow, workloads::Fusion::fused),
                   saved_bf16_minus_int8);

  workloads::TrainingOptions o;
  o.micro_batch = 1;
  o.seq_len = 4096;
  o.fusion = workloads::Fusion::fused;
  const auto spec = workloads::parse_workload("model:llama2-7b");
  const auto a = workloads::estimate_memory(spec, m.with_layers(8), block, o);
  const auto b = workloads::estimate_memory(spec, m.with_layers(8), dataflow, o);
  const double layer_weights = 4096.0 * 3 * 4096 + 4096.0 * 4096 + 3 * 4096.0 * 11008;
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(a.activations_gib - b.activations_gib,
              (8 * layer_weights + 8 * 4096 * saved_bf16_minus_int8) / gib, 1e-9);
}

// Qwen3 under saved=int8 keeps qkv alone for its attention (norms, RoPE and SDPA run again in
// backward), where BF16 keeps qkv (the norms' input), the normalized and rotated q and k, the
// inverse RMS of every head, o and the log-sum-exp (hand count, qwen3-8b).
TEST(MemoryPlan, SavedInt8KeepsOnlyQkvForQwenAttention) {
  const workloads::ModelConfig& m = workloads::builtin_model("qwen3-8b");
  ASSERT_TRUE(m.qk_norm);
  const double h = 4096, q = 32 * 128, kv = 8 * 128, f = 12288, heads = 32, kv_heads = 8;
  const double norms = 2 * (2 * h - (h + 4 * h / 128));
  const double attention_bf16 =
      2 * (q + 2 * kv) + 2 * q + 4 * heads + 2 * (q + kv) + 4 * (heads + kv_heads);
  const double attention_int8 = (q + 2 * kv) + 4 * (q + 2 * kv) / 128;
  const double swiglu = 4 * f - (2 * f + 4 * (2 * f / 128));
  EXPECT_DOUBLE_EQ(workloads::activation_bytes_per_token(m, kernels::recipe_by_name("int8-block"),
                                                         workloads::Fusion::fused) -
                       workloads::activation_bytes_per_token(
                           m, kernels::recipe_by_name("int8-dataflow"), workloads::Fusion::fused),
                   norms + attention_bf16 - attention_int8 + swiglu);
}

}  // namespace
}  // namespace lpbench::config
