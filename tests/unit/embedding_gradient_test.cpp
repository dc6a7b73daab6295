// The model step with the embedding's gradient by rows (kernels/torch/embedding.h): the same
// losses and weights, bit for bit, as with the dense table it stands for; used only where its
// conditions hold; and the memory plan counts the rows, not the table.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "kernels/recipe.h"
#include "workloads/levels/memory_plan.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace lpbench::workloads {
namespace {

TrainingOptions fused_options(bool by_rows) {
  TrainingOptions o;
  o.micro_batch = 2;
  o.seq_len = 32;
  o.seed = 9;
  o.total_steps = 3;
  o.lr = 3e-3;
  o.lr_warmup_steps = 1;
  o.fusion = Fusion::fused;
  o.embedding_gradient_by_rows = by_rows;
  return o;
}

TEST(EmbeddingGradientByRows, TrainsTheModelWithTheDenseGradientsBits) {
  for (const char* recipe : {"bf16", "int8-tensor"}) {
    std::vector<std::vector<double>> losses;
    std::vector<torch::Tensor> embeddings;
    std::vector<std::string> operators;
    for (const bool by_rows : {true, false}) {
      const TrainingOptions o = fused_options(by_rows);
      auto model = make_workload(parse_workload("model:tiny"), builtin_model("tiny"),
                                 kernels::parse_recipe(recipe), o, torch::kCPU);
      std::vector<double> l;
      for (int64_t step = 0; step < o.total_steps; ++step)
        l.push_back(*model->step(step).loss);
      l.push_back(model->evaluate()->loss);
      losses.push_back(l);
      operators.push_back(model->operators());
    }
    EXPECT_EQ(losses[0], losses[1]) << recipe;
    EXPECT_NE(operators[0].find("the embedding's gradient by rows"), std::string::npos)
        << operators[0];
    EXPECT_EQ(operators[1].find("by rows"), std::string::npos) << operators[1];
  }
}

TEST(EmbeddingGradientByRows, IsKeptOnlyWhereItsConditionsHold) {
  EXPECT_TRUE(embedding_gradient_by_rows(fused_options(true), /*tied_embeddings=*/false));
  EXPECT_FALSE(embedding_gradient_by_rows(fused_options(false), false));
  EXPECT_FALSE(embedding_gradient_by_rows(fused_options(true), /*tied_embeddings=*/true));
  TrainingOptions unfused = fused_options(true);
  unfused.fusion = Fusion::none;
  EXPECT_FALSE(embedding_gradient_by_rows(unfused, false));
  TrainingOptions accumulated = fused_options(true);
  accumulated.grad_accum = 2;
  EXPECT_FALSE(embedding_gradient_by_rows(accumulated, false));
  TrainingOptions parallel = fused_options(true);
  parallel.data_parallel_size = 2;
  EXPECT_FALSE(embedding_gradient_by_rows(parallel, false));
}

// Qwen3-8B at 4096 tokens: the dense table is 151 936 × 4096 FP32 (2.32 GiB); by rows, at most
// 4096 rows (64 MiB).
TEST(EmbeddingGradientByRows, TheMemoryPlanCountsTheRowsNotTheTable) {
  const ModelConfig model = builtin_model("qwen3-8b");
  const kernels::Recipe recipe = kernels::recipe_by_name("int8-tensor");
  TrainingOptions rows = fused_options(true);
  rows.micro_batch = 1;
  rows.seq_len = 4096;
  TrainingOptions dense = rows;
  dense.embedding_gradient_by_rows = false;
  const WorkloadSpec spec = parse_workload("model:qwen3-8b");
  const double table = 4.0 * 151936 * 4096 / (1024.0 * 1024 * 1024);
  const double held = 4.0 * 4096 * 4096 / (1024.0 * 1024 * 1024);
  EXPECT_NEAR(estimate_memory(spec, model, recipe, dense).gradients_gib -
                  estimate_memory(spec, model, recipe, rows).gradients_gib,
              table - held, 1e-9);
}

}  // namespace
}  // namespace lpbench::workloads
