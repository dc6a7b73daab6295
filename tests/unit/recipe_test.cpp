#include <gtest/gtest.h>

#include "kernels/recipe.h"

namespace lpbench::kernels {
namespace {

TEST(Recipe, NamedRecipesAreTheBaselineAndTheSeedScheme) {
  EXPECT_EQ(recipe_names(), (std::vector<std::string>{"bf16", "int8-tensor"}));
  EXPECT_FALSE(recipe_by_name("bf16").gemms.any_quantized());
  const Recipe& int8 = recipe_by_name("int8-tensor");
  for (GemmKind kind : kGemmKinds) {
    EXPECT_EQ(int8.gemms[kind].format, NumberFormat::int8) << to_string(kind);
    EXPECT_EQ(int8.gemms[kind].scaling, Scaling::tensor) << to_string(kind);
  }
  EXPECT_THROW(recipe_by_name("int4"), std::out_of_range);
}

TEST(ModuleFilter, Int8KeepsEmbeddingAndOutputInBf16AndSaysWhy) {
  const Recipe& int8 = recipe_by_name("int8-tensor");
  const ModuleDecision output = decide(int8, "output", ModuleKind::linear);
  EXPECT_FALSE(output.quantized);
  EXPECT_EQ(output.gemms, LinearGemms::all_bf16());
  EXPECT_NE(output.reason.find("hierarchical precision"), std::string::npos);
  const ModuleDecision embedding = decide(int8, "embedding", ModuleKind::embedding);
  EXPECT_FALSE(embedding.quantized);
  EXPECT_NE(embedding.reason.find("hierarchical precision"), std::string::npos);
  const ModuleDecision qkv = decide(int8, "layers.3.attention.qkv", ModuleKind::linear);
  EXPECT_TRUE(qkv.quantized);
  EXPECT_EQ(qkv.gemms, int8.gemms);
}

TEST(ModuleFilter, Bf16QuantizesNothing) {
  const ModuleDecision d = decide(recipe_by_name("bf16"), "layers.0.mlp.down", ModuleKind::linear);
  EXPECT_FALSE(d.quantized);
  EXPECT_NE(d.reason.find("every GEMM in BF16"), std::string::npos);
}

TEST(ModuleFilter, GlobPatternsMatchWholeNames) {
  Recipe recipe = recipe_by_name("int8-tensor");
  recipe.keep_bf16 = {{"layers.*.mlp.down", "test: keep the down projections"}};
  EXPECT_FALSE(decide(recipe, "layers.0.mlp.down", ModuleKind::linear).quantized);
  EXPECT_FALSE(decide(recipe, "layers.11.mlp.down", ModuleKind::linear).quantized);
  EXPECT_TRUE(decide(recipe, "layers.0.mlp.gate_up", ModuleKind::linear).quantized);
  EXPECT_TRUE(decide(recipe, "output", ModuleKind::linear).quantized);  // rule removed
  // An embedding lookup is never a quantized product, whatever the rules say.
  EXPECT_FALSE(decide(recipe, "embedding", ModuleKind::embedding).quantized);
}

TEST(Recipe, DescriptionsAreReadable) {
  EXPECT_EQ(describe(recipe_by_name("int8-tensor").gemms),
            "fprop=int8/tensor dgrad=int8/tensor wgrad=int8/tensor");
  EXPECT_EQ(fmt::format("{}", GemmSpec{}), "bf16");
}

}  // namespace
}  // namespace lpbench::kernels
