#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "kernels/recipe.h"
#include "kernels/reference/rope.h"
#include "workloads/data/synthetic_tokens.h"
#include "workloads/levels/workload.h"
#include "workloads/models/decoder.h"
#include "workloads/models/model_config.h"
#include "workloads/models/rope.h"

namespace lpbench::workloads {
namespace {

TEST(SyntheticTokens, BatchesDependOnlyOnTheStep) {
  const SyntheticTokens source(512, 7);
  const at::Tensor later_first = source.batch(5, 4, 32);
  source.batch(0, 4, 32);
  EXPECT_TRUE(torch::equal(source.batch(5, 4, 32), later_first));
  EXPECT_FALSE(torch::equal(source.batch(6, 4, 32), later_first));
  EXPECT_FALSE(torch::equal(SyntheticTokens(512, 8).batch(5, 4, 32), later_first));
  EXPECT_EQ(later_first.sizes(), (std::vector<int64_t>{4, 33}));
  EXPECT_GE(later_first.min().item<int64_t>(), 0);
  EXPECT_LT(later_first.max().item<int64_t>(), 512);
}

TEST(SyntheticTokens, EachTokenHasAtMostFourSuccessors) {
  const SyntheticTokens source(64, 1);
  const at::Tensor t = source.batch(0, 64, 256);
  std::vector<std::set<int64_t>> successors(64);
  auto a = t.accessor<int64_t, 2>();
  for (int64_t b = 0; b < t.size(0); ++b) {
    for (int64_t i = 0; i + 1 < t.size(1); ++i)
      successors[a[b][i]].insert(a[b][i + 1]);
  }
  size_t most = 0;
  for (const auto& s : successors)
    most = std::max(most, s.size());
  EXPECT_LE(most, 4U);
  EXPECT_GE(most, 3U);  // and the chain really branches
}

TEST(LearningRate, WarmsUpLinearlyThenDecaysToTheFloor) {
  TrainingOptions o;
  o.lr = 1e-3;
  o.total_steps = 100;
  o.lr_warmup_steps = 10;
  o.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate_at(0, o), 1e-4);
  EXPECT_DOUBLE_EQ(learning_rate_at(9, o), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate_at(10, o), 1e-3);
  EXPECT_NEAR(learning_rate_at(55, o), 0.55e-3, 1e-12);  // halfway: the mean of peak and floor
  EXPECT_DOUBLE_EQ(learning_rate_at(100, o), 1e-4);
}

TEST(WorkloadSpec, ParsesLevelAndModelAndNamesWhatIsWrong) {
  const WorkloadSpec spec = parse_workload("model:tiny");
  EXPECT_EQ(spec.level, Level::model);
  EXPECT_EQ(spec.model, "tiny");
  EXPECT_EQ(spec.text(), "model:tiny");
  const WorkloadSpec shape = parse_workload("gemm:4096x8192x1024");
  ASSERT_TRUE(shape.shape.has_value());
  EXPECT_EQ(shape.shape->n, 8192);
  EXPECT_EQ(shape.text(), "gemm:4096x8192x1024");
  const WorkloadSpec linear = parse_workload("linear:llama2-7b");
  EXPECT_EQ(linear.part, "gate_up");  // the default part
  const WorkloadSpec path = parse_workload("gemm:configs/my model.json:down");
  EXPECT_EQ(path.model, "configs/my model.json");
  EXPECT_EQ(path.part, "down");
  for (const char* bad : {"tiny", "model:", ":tiny", "", "layer:tiny:qkv", "gemm::out"}) {
    EXPECT_THROW(parse_workload(bad), std::invalid_argument) << bad;
  }
  try {
    parse_workload("galaxy:tiny");
    FAIL();
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("valid levels: gemm, linear, layer, model"),
              std::string::npos);
  }
}

TEST(ModelConfig, TinyIsAFewMillionParametersAndConsistent) {
  const ModelConfig& tiny = builtin_model("tiny");
  EXPECT_EQ(check_model_config(tiny), "");
  EXPECT_GT(tiny.parameter_count(), 2'000'000);
  EXPECT_LT(tiny.parameter_count(), 10'000'000);
  EXPECT_THROW(builtin_model("gpt-5"), std::out_of_range);
}

int64_t count_parameters(torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters())
    total += p.numel();
  return total;
}

TEST(Decoder, ParameterCountMatchesTheFormulaTiedAndUntied) {
  ModelConfig config = builtin_model("tiny");
  Decoder untied(config, kernels::recipe_by_name("bf16"), 16);
  EXPECT_EQ(count_parameters(*untied), config.parameter_count());
  config.tie_embeddings = true;
  Decoder tied(config, kernels::recipe_by_name("bf16"), 16);
  EXPECT_EQ(count_parameters(*tied), config.parameter_count());
}

TEST(Decoder, RecordsWhatTheRecipeQuantized) {
  const ModelConfig& config = builtin_model("tiny");
  Decoder decoder(config, kernels::recipe_by_name("int8-tensor"), 16);
  int quantized = 0;
  for (const kernels::ModuleDecision& d : decoder->decisions()) {
    if (d.module == "embedding" || d.module == "output") {
      EXPECT_FALSE(d.quantized) << d.module;
    } else {
      EXPECT_TRUE(d.quantized) << d.module;
      ++quantized;
    }
  }
  EXPECT_EQ(quantized, 4 * config.num_layers);  // qkv, out, gate_up, down per layer
  EXPECT_EQ(decoder->decisions().size(), static_cast<size_t>(quantized + 2));
}

TEST(Decoder, SameSeedSameWeightsWhateverTheRecipe) {
  const ModelConfig& config = builtin_model("tiny");
  torch::manual_seed(11);
  Decoder a(config, kernels::recipe_by_name("bf16"), 16);
  torch::manual_seed(11);
  Decoder b(config, kernels::recipe_by_name("int8-tensor"), 16);
  const auto pa = a->parameters();
  const auto pb = b->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(torch::equal(pa[i], pb[i]));
}

TEST(Decoder, ForwardGivesBf16LogitsThatDependOnlyOnThePast) {
  const ModelConfig& config = builtin_model("tiny");
  torch::manual_seed(0);
  Decoder decoder(config, kernels::recipe_by_name("bf16"), 16);
  const at::Tensor tokens = torch::randint(0, config.vocab_size, {2, 16}, torch::kLong);
  const at::Tensor logits = decoder->forward(tokens);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 16, config.vocab_size}));
  EXPECT_EQ(logits.scalar_type(), torch::kBFloat16);
  // Causal: changing the last token leaves every earlier position's logits unchanged.
  at::Tensor changed = tokens.clone();
  changed[0][15] = (changed[0][15].item<int64_t>() + 1) % config.vocab_size;
  const at::Tensor other = decoder->forward(changed);
  EXPECT_TRUE(torch::equal(other.narrow(1, 0, 15), logits.narrow(1, 0, 15)));
  EXPECT_FALSE(torch::equal(other.narrow(1, 15, 1), logits.narrow(1, 15, 1)));
}

TEST(Rope, RotationKeepsNormsAndPositionZeroIsIdentity) {
  ModelConfig config = builtin_model("tiny");
  config.head_dim = 16;
  auto [cos, sin] = rope_tables(config, 8);
  torch::manual_seed(1);
  const at::Tensor x = torch::randn({1, 8, 2, 16});
  const at::Tensor r = kernels::reference::rope(x, cos, sin);
  EXPECT_TRUE(torch::allclose(r.norm(2, -1), x.norm(2, -1), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(r.narrow(1, 0, 1), x.narrow(1, 0, 1)));
}

TEST(ModelLevel, TrainingStepsLowerTheLossOnSyntheticTokens) {
  TrainingOptions o;
  o.micro_batch = 8;
  o.seq_len = 32;
  o.seed = 0;
  o.total_steps = 60;
  o.lr = 3e-3;
  o.lr_warmup_steps = 6;
  auto workload = make_workload(parse_workload("model:tiny"), builtin_model("tiny"),
                                kernels::recipe_by_name("int8-tensor"), o, torch::kCPU);
  const StepOutput first = workload->step(0);
  ASSERT_TRUE(first.loss.has_value());
  EXPECT_NEAR(*first.loss, std::log(512.0), 0.3);  // an untrained model is near-uniform
  StepOutput last;
  for (int64_t i = 1; i < o.total_steps; ++i) {
    last = workload->step(i);
  }
  EXPECT_LT(*last.loss, *first.loss - 2.0);
  EXPECT_EQ(last.tokens, 8 * 32);
  EXPECT_TRUE(std::isfinite(*last.grad_norm));
  // Validation on held-out batches of the same chain: close to the training loss.
  const auto eval = workload->evaluate();
  ASSERT_TRUE(eval.has_value());
  EXPECT_NEAR(eval->loss, *last.loss, 0.5);
  EXPECT_EQ(eval->tokens, o.eval_batches * 8 * 32);
}

}  // namespace
}  // namespace lpbench::workloads
