// Gradient accumulation at the model level: N micro-batches train as one batch of all of them,
// and the weights quantized once a step give the bits that quantizing them at every micro-batch
// gives.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "kernels/profiling/range.h"
#include "kernels/recipe.h"
#include "workloads/levels/memory_plan.h"
#include "workloads/levels/workload.h"

namespace lpbench::workloads {
namespace {

TrainingOptions options(int64_t micro_batch, int64_t grad_accum) {
  TrainingOptions o;
  o.micro_batch = micro_batch;
  o.grad_accum = grad_accum;
  o.seq_len = 32;
  o.seed = 5;
  o.total_steps = 4;
  o.lr = 3e-3;
  o.lr_warmup_steps = 1;
  return o;
}

struct Trained {
  std::vector<double> losses;  // each step's, then the evaluation's
  int64_t tokens_per_step = 0;
  std::string shape;
  std::string operators;
};

Trained train(const char* recipe, const TrainingOptions& o) {
  auto model = make_workload(parse_workload("model:tiny"), builtin_model("tiny"),
                             kernels::parse_recipe(recipe), o, torch::kCPU);
  Trained t;
  for (int64_t step = 0; step < o.total_steps; ++step)
    t.losses.push_back(*model->step(step).loss);
  t.losses.push_back(model->evaluate()->loss);
  t.tokens_per_step = model->tokens_per_step();
  t.shape = model->shape_description();
  t.operators = model->operators();
  return t;
}

// Trains `recipe` under `o` into `out` with region timing on; how many `key` regions it opened.
int64_t train_counting(const char* key, const char* recipe, const TrainingOptions& o,
                       Trained& out) {
  profiling::set_region_timing(true, c10::Device(c10::kCPU));
  (void)profiling::take_region_times();
  out = train(recipe, o);
  int64_t calls = 0;
  for (const profiling::RegionTime& r : profiling::take_region_times()) {
    if (r.key == key) calls += r.calls;
  }
  profiling::set_region_timing(false, c10::Device(c10::kCPU));
  return calls;
}

// Two micro-batches of 4 sequences are the step's 8 sequences: the same tokens, the mean loss of
// both, the gradients summed. Only the rounding of the BF16 products and of the sum differs.
TEST(GradAccum, TwoMicroBatchesTrainAsOneBatchOfBoth) {
  for (const char* recipe : {"bf16", "int8-row"}) {
    const Trained whole = train(recipe, options(8, 1));
    const Trained split = train(recipe, options(4, 2));
    EXPECT_EQ(split.tokens_per_step, whole.tokens_per_step);
    EXPECT_NE(split.shape.find("2 micro-batches × 4 × 32 tokens"), std::string::npos)
        << split.shape;
    ASSERT_EQ(split.losses.size(), whole.losses.size());
    // Before any update the loss is the batch's, up to the order of its sum.
    EXPECT_NEAR(split.losses[0], whole.losses[0], 1e-5 * whole.losses[0]) << recipe;
    for (size_t i = 1; i < whole.losses.size(); ++i) {
      EXPECT_NEAR(split.losses[i], whole.losses[i], 1e-2 * whole.losses[i])
          << recipe << " step " << i;
    }
    // The steps learned (the tiny model's loss starts at ln 512 = 6.24).
    EXPECT_LT(split.losses.back(), split.losses[0]) << recipe;
    // Not one micro-batch's update twice, nor one of the two alone.
    const Trained half = train(recipe, options(4, 1));
    EXPECT_GT(std::abs(half.losses[2] - whole.losses[2]),
              10 * std::abs(split.losses[2] - whole.losses[2]))
        << recipe;
  }
}

// The cache skips W's quantization after the first micro-batch of a step: fewer quantize regions,
// the same losses bit for bit, and the run's operators say so.
TEST(GradAccum, WeightsQuantizedOnceAStepGiveTheSameBits) {
  for (const Fusion fusion : {Fusion::none, Fusion::fused}) {
    TrainingOptions o = options(2, 3);
    o.fusion = fusion;
    const auto quantize_calls = [&](bool cache, Trained& out) {
      TrainingOptions t = o;
      t.weight_cache = cache;
      return train_counting("quantize", "int8-tensor", t, out);
    };
    Trained cached;
    Trained uncached;
    const int64_t with = quantize_calls(true, cached);
    const int64_t without = quantize_calls(false, uncached);
    EXPECT_EQ(cached.losses, uncached.losses) << to_string(fusion);
    // 4 layers of 4 quantized linear layers, W's two layouts in one quantization: each layer
    // saves 2 of its 3 a step, and in the evaluation (4 batches, without gradients) 3 of 4.
    const int64_t linears = 16;
    const int64_t saved = o.total_steps * (o.grad_accum - 1) + (o.eval_batches - 1);
    EXPECT_EQ(without - with, linears * saved)
        << to_string(fusion) << ": " << without << " against " << with;
    EXPECT_NE(cached.operators.find("quantized weights made once an optimizer step (3 "
                                    "micro-batches)"),
              std::string::npos)
        << cached.operators;
    EXPECT_EQ(uncached.operators.find("once an optimizer step"), std::string::npos);
  }
}

// Fused, the wgrad products of every micro-batch after the first add into the summed gradients
// (16 linear layers, 2 of 3 micro-batches, 4 steps); off, autograd adds them: the same bits.
TEST(GradAccum, WgradProductsAddIntoTheGradientsWithTheSameBits) {
  for (const char* recipe : {"bf16", "int8-tensor", "int8-block"}) {
    const auto run = [&](bool fusion, Trained& out) {
      TrainingOptions o = options(2, 3);
      o.fusion = Fusion::fused;
      o.gradient_accumulation_fusion = fusion;
      return train_counting("gemm into gradient", recipe, o, out);
    };
    Trained fused;
    Trained unfused;
    EXPECT_EQ(run(true, fused), 16 * 2 * 4) << recipe;
    EXPECT_EQ(run(false, unfused), 0) << recipe;
    EXPECT_EQ(fused.losses, unfused.losses) << recipe;
    const std::string marker = "wgrad products add into the FP32 gradients";
    EXPECT_NE(fused.operators.find(marker), std::string::npos) << fused.operators;
    EXPECT_EQ(unfused.operators.find(marker), std::string::npos) << unfused.operators;
  }
  // One micro-batch a step on one process: no gradient is defined when backward runs, so
  // nothing adds, and the run does not claim it.
  TrainingOptions one = options(2, 1);
  one.fusion = Fusion::fused;
  one.total_steps = 1;
  Trained single;
  EXPECT_EQ(train_counting("gemm into gradient", "int8-tensor", one, single), 0);
  EXPECT_EQ(single.operators.find("gradient accumulation fusion"), std::string::npos)
      << single.operators;
}

// Accumulated gradients live beside every micro-batch's activations after the first, and the
// cached weights beside them: the plan counts both.
TEST(GradAccum, TheMemoryPlanKeepsTheGradientsAndTheCachedWeights) {
  const ModelConfig model = builtin_model("llama2-7b").with_layers(2);
  const kernels::Recipe recipe = kernels::recipe_by_name("int8-tensor");
  TrainingOptions one = options(1, 1);
  one.seq_len = 4096;
  one.fusion = Fusion::fused;
  TrainingOptions accum = one;
  accum.grad_accum = 4;
  TrainingOptions uncached = accum;
  uncached.weight_cache = false;
  const WorkloadSpec spec = parse_workload("model:llama2-7b");
  const MemoryEstimate a = estimate_memory(spec, model, recipe, one);
  const MemoryEstimate b = estimate_memory(spec, model, recipe, accum);
  const MemoryEstimate c = estimate_memory(spec, model, recipe, uncached);
  EXPECT_FALSE(a.gradients_persist);
  EXPECT_TRUE(b.gradients_persist);
  // The cache adds the fprop layouts of both layers' linear weights (1 byte each): their dgrad
  // layouts are what the layers save for backward anyway.
  const double linear = 4096.0 * (3 * 4096) + 4096.0 * 4096 + 3 * 4096.0 * 11008;
  EXPECT_NEAR(b.total_gib() - c.total_gib(), 2 * linear / (1024.0 * 1024 * 1024), 1e-9);
  // The summed gradients (2.2 GiB) beside the activations, where one step frees one as it makes
  // the other.
  EXPECT_GT(c.total_gib(), a.total_gib() + 1.0);
}

}  // namespace
}  // namespace lpbench::workloads
