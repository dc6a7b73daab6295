#include <gtest/gtest.h>

#include "base/store/records.h"
#include "kernels/recipe.h"
#include "kernels/torch/gemm.h"
#include "kernels/torch/scaled_gemm.h"

namespace lpbench::kernels {
namespace {

TEST(Recipe, NamedRecipesAreTheBaselineAndTheSeedScheme) {
  EXPECT_EQ(recipe_names(),
            (std::vector<std::string>{"bf16", "int8-tensor", "int8-row", "int8-block",
                                      "int8-fallback", "switchback", "fp8-tensor", "fp8-row",
                                      "fp8-block", "int8-dataflow"}));
  EXPECT_FALSE(recipe_by_name("bf16").gemms.any_quantized());
  const Recipe& int8 = recipe_by_name("int8-tensor");
  for (GemmKind kind : kGemmKinds) {
    EXPECT_EQ(int8.gemms[kind].lhs, NumberFormat::int8) << to_string(kind);
    EXPECT_EQ(int8.gemms[kind].rhs, NumberFormat::int8) << to_string(kind);
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

TEST(Recipe, Fp8UsesE4m3ForwardAndE5m2Gradients) {
  const LinearGemms g = recipe_by_name("fp8-tensor").gemms;
  EXPECT_EQ(g.fprop.lhs, NumberFormat::fp8_e4m3);
  EXPECT_EQ(g.fprop.rhs, NumberFormat::fp8_e4m3);
  EXPECT_EQ(g.dgrad.lhs, NumberFormat::fp8_e5m2);  // dY
  EXPECT_EQ(g.dgrad.rhs, NumberFormat::fp8_e4m3);  // W
  EXPECT_EQ(g.wgrad.lhs, NumberFormat::fp8_e5m2);  // dYᵀ
  EXPECT_EQ(describe(g.dgrad), "e5m2×e4m3/tensor");
}

TEST(ParseRecipe, ModifiersOverrideGemmsRatioAndKeepRules) {
  const Recipe wgrad = parse_recipe("int8-tensor:wgrad=bf16");
  EXPECT_EQ(wgrad.name, "int8-tensor:wgrad=bf16");
  EXPECT_FALSE(wgrad.gemms.wgrad.quantized());
  EXPECT_TRUE(wgrad.gemms.dgrad.quantized());
  const Recipe ratio = parse_recipe("int8-fallback:ratio=8,dgrad=bf16");
  EXPECT_DOUBLE_EQ(ratio.gemms.fprop.outlier_ratio, 8.0);
  EXPECT_FALSE(ratio.gemms.dgrad.quantized());
  const Recipe all = parse_recipe("fp8-block:quantize-all");
  EXPECT_TRUE(decide(all, "output", ModuleKind::linear).quantized);
  EXPECT_FALSE(decide(all, "layers.0.moe.router", ModuleKind::linear).quantized);  // never
  EXPECT_EQ(parse_recipe("int8-row").gemms, recipe_by_name("int8-row").gemms);
  const Recipe delayed = parse_recipe("fp8-tensor:wgrad=bf16,amax-history=16");
  EXPECT_EQ(delayed.gemms.fprop.amax_history, 16);
  EXPECT_EQ(delayed.gemms.dgrad.amax_history, 16);
  EXPECT_EQ(delayed.gemms.wgrad, GemmSpec{});  // kept BF16: no history
  EXPECT_EQ(describe(delayed.gemms.fprop), "e4m3/tensor(history 16)");
  EXPECT_EQ(recipe_by_name("int8-tensor").gemms.fprop.amax_history, 0);  // dynamic by default
  // dy=row with delayed scaling: X and W by their histories, dY by its own rows (gemm.cpp gives
  // the row-scaled operand no history).
  const Recipe row_dy = parse_recipe("int8-tensor:dy=row,amax-history=4");
  EXPECT_EQ(row_dy.gemms.dgrad.lhs_scaling, Scaling::row);
  EXPECT_EQ(row_dy.gemms.dgrad.amax_history, 4);
  EXPECT_EQ(row_dy.gemms.wgrad.amax_history, 4);
}

TEST(Recipe, SwitchbackQuantizesFpropAndDgradPerRowAndKeepsWgradInBf16) {
  const LinearGemms g = recipe_by_name("switchback").gemms;
  EXPECT_EQ(g.fprop, recipe_by_name("int8-row").gemms.fprop);
  EXPECT_EQ(g.dgrad, recipe_by_name("int8-row").gemms.dgrad);
  EXPECT_EQ(g.wgrad, GemmSpec{});
  EXPECT_EQ(describe(g), "fprop=int8/row dgrad=int8/row wgrad=bf16");
}

// Issue 23's ablations of the output gradient dY: kept in BF16, scaled per token, rounded
// stochastically. fprop is never touched; W and X keep the recipe's own treatment.
TEST(ParseRecipe, DyModifiersChangeOnlyTheGradientOperand) {
  const LinearGemms base = recipe_by_name("int8-tensor").gemms;
  const LinearGemms bf16 = parse_recipe("int8-tensor:dy=bf16").gemms;
  EXPECT_EQ(bf16.fprop, base.fprop);
  for (GemmKind kind : {GemmKind::dgrad, GemmKind::wgrad}) {
    EXPECT_FALSE(bf16[kind].quantized()) << to_string(kind);
    EXPECT_TRUE(bf16[kind].rounds_rhs_only()) << to_string(kind);
    EXPECT_EQ(bf16[kind].rhs, NumberFormat::int8);
  }
  EXPECT_EQ(describe(bf16.dgrad), "bf16×int8/tensor(bf16 product)");
  EXPECT_TRUE(decide(parse_recipe("int8-tensor:fprop=bf16,dy=bf16"), "layers.0.attention.qkv",
                     ModuleKind::linear)
                  .quantized);  // W and X are still rounded in the backward products

  const LinearGemms row = parse_recipe("int8-tensor:dy=row").gemms;
  EXPECT_EQ(row.fprop, base.fprop);
  EXPECT_EQ(row.dgrad.scaling_of_lhs(), Scaling::row);
  EXPECT_EQ(row.dgrad.scaling, Scaling::tensor);  // W
  EXPECT_EQ(describe(row.wgrad), "int8/row×tensor");

  const LinearGemms sr = parse_recipe("int8-block:dy-rounding=stochastic").gemms;
  EXPECT_EQ(sr.fprop, recipe_by_name("int8-block").gemms.fprop);
  EXPECT_EQ(sr.dgrad.lhs_rounding, Rounding::stochastic);
  EXPECT_EQ(sr.wgrad.lhs_rounding, Rounding::stochastic);
  EXPECT_EQ(describe(sr.dgrad), "int8/block(stochastic)");
  // Only the quantized products take it: switchback's wgrad stays BF16.
  const LinearGemms sw = parse_recipe("switchback:dy-rounding=stochastic").gemms;
  EXPECT_EQ(sw.dgrad.lhs_rounding, Rounding::stochastic);
  EXPECT_EQ(sw.wgrad, GemmSpec{});
  EXPECT_EQ(parse_recipe("int8-row:dy-rounding=stochastic,dy-rounding=nearest").gemms,
            recipe_by_name("int8-row").gemms);
}

TEST(ParseRecipe, NamesWhatIsWrong) {
  auto error_of = [](const char* text) {
    try {
      parse_recipe(text);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("int4").find("valid recipes: bf16, int8-tensor"), std::string::npos);
  EXPECT_NE(error_of("int8-tensor:xgrad=bf16").find("unknown GEMM 'xgrad'"), std::string::npos);
  EXPECT_NE(error_of("int8-tensor:ratio=4").find("int8-fallback only"), std::string::npos);
  EXPECT_NE(error_of("int8-fallback:ratio=0.5").find("above 1"), std::string::npos);
  EXPECT_NE(error_of("int8-tensor:fast").find("unknown modifier 'fast'"), std::string::npos);
  EXPECT_NE(error_of("int8-row:amax-history=16").find("tensor scaling only"), std::string::npos);
  for (const char* bad : {"int8-tensor:amax-history=0", "int8-tensor:amax-history=1025",
                          "int8-tensor:amax-history=4x", "int8-tensor:amax-history"}) {
    EXPECT_NE(error_of(bad).find("from 1 to 1024"), std::string::npos) << bad;
  }
  EXPECT_NE(error_of("fp8-tensor:dy-rounding=stochastic").find("INT8 gradients only"),
            std::string::npos);
  EXPECT_NE(error_of("int8-row:dy=row").find("applies to int8-tensor"), std::string::npos);
  EXPECT_NE(error_of("bf16:dy=bf16").find("needs a recipe that quantizes dY"), std::string::npos);
  EXPECT_NE(error_of("int8-tensor:dgrad=bf16,wgrad=bf16,dy-rounding=stochastic")
                .find("needs a recipe that quantizes dY"),
            std::string::npos);
  EXPECT_NE(error_of("int8-tensor:dy=int4").find("valid: dy=bf16, dy=row"), std::string::npos);
  EXPECT_NE(error_of("int8-tensor:dy-rounding=up").find("dy-rounding=stochastic"),
            std::string::npos);
  EXPECT_NE(error_of("int8-tensor:amax-history=4,dy-rounding=stochastic").find("do not combine"),
            std::string::npos);
  EXPECT_NE(error_of("int8-tensor:saved=fp8").find("valid: saved=int8, saved=bf16"),
            std::string::npos);
  EXPECT_NE(error_of("int8-tensor:saved=int8,amax-history=4").find("saved=int8 and amax-history"),
            std::string::npos);
  for (const char* bad : {"int8-block:k-block=64", "int8-block:k-block=384",
                          "int8-block:k-block=2048", "int8-block:k-block=", "int8-block:k-block"}) {
    EXPECT_NE(error_of(bad).find("k-block must be 128, 256, 512 or 1024"), std::string::npos)
        << bad;
  }
  for (const char* other : {"int8-tensor:k-block=256", "int8-row:k-block=256",
                            "fp8-block:k-block=256", "bf16:k-block=256"}) {
    EXPECT_NE(error_of(other).find("k-block applies to INT8 block scaling only"), std::string::npos)
        << other;
  }
}

// k-block=<kb> sets the K block of every block-scaled product, and the operands follow it:
// activations and gradients 1 × kb, weights kb × kb (fprop's W and dgrad's Wᵀ one quantization).
TEST(ParseRecipe, KBlockSetsTheBlocksOfEveryBlockScaledOperand) {
  EXPECT_EQ(parse_recipe("int8-block:k-block=128").gemms, recipe_by_name("int8-block").gemms);
  for (const char* text : {"int8-block:k-block=512", "int8-fallback:k-block=512",
                           "int8-dataflow:k-block=512", "int8-block:wgrad=bf16,k-block=512"}) {
    SCOPED_TRACE(text);
    const Recipe r = parse_recipe(text);
    for (GemmKind kind : kGemmKinds) {
      const GemmSpec& g = r.gemms[kind];
      if (!g.quantized()) {
        EXPECT_EQ(g, GemmSpec{});
        continue;
      }
      EXPECT_EQ(g.k_block, 512);
      EXPECT_NE(describe(g).find("(K block 512)"), std::string::npos);
      const QuantSpec lhs = operand_spec(g, kind, Side::lhs);
      const QuantSpec rhs = operand_spec(g, kind, Side::rhs);
      EXPECT_EQ(lhs.block_rows, 1);
      EXPECT_EQ(lhs.block_cols, 512);
      EXPECT_EQ(rhs.block_rows, kind == GemmKind::wgrad ? 1 : 512);
      EXPECT_EQ(rhs.block_cols, 512);
    }
  }
  EXPECT_EQ(describe(recipe_by_name("int8-block").gemms.fprop).find("K block"), std::string::npos);
}

// --recipes is split at every comma; a recipe's modifiers go back to it.
TEST(ParseRecipe, ARecipeListKeepsEachRecipesModifiers) {
  EXPECT_EQ(regroup_recipe_list({"bf16", "int8-tensor:dy=row", "saved=int8", "int8-block",
                                 "int8-tensor:hadamard=64", "dy-rounding=stochastic"}),
            (std::vector<std::string>{"bf16", "int8-tensor:dy=row,saved=int8", "int8-block",
                                      "int8-tensor:hadamard=64,dy-rounding=stochastic"}));
  // What cannot continue a recipe stays as given, for parse_recipe to name.
  EXPECT_EQ(regroup_recipe_list({"bf16", "int8-tensr", "int8-tensor:dy=row", "int8-tensr"}),
            (std::vector<std::string>{"bf16", "int8-tensr", "int8-tensor:dy=row,int8-tensr"}));
}

// saved=int8 changes what the operators keep and where dgrad's W comes from, not the products;
// int8-dataflow is int8-block under it.
TEST(ParseRecipe, SavedInt8KeepsTheProductsAndMakesWAgainInBackward) {
  const Recipe plain = parse_recipe("int8-tensor:dy=row");
  const Recipe saved = parse_recipe("int8-tensor:dy=row,saved=int8");
  EXPECT_EQ(plain.saved, SavedActivations::bf16);
  EXPECT_EQ(saved.saved, SavedActivations::int8);
  EXPECT_FALSE(plain.gemms.requantize_w);
  EXPECT_TRUE(saved.gemms.requantize_w);
  for (GemmKind kind : kGemmKinds)
    EXPECT_EQ(saved.gemms[kind], plain.gemms[kind]);
  EXPECT_NE(describe(saved.gemms).find("W again in backward"), std::string::npos);
  // Modules kept in BF16 save their BF16 weight copy as before.
  EXPECT_FALSE(decide(saved, "output", ModuleKind::linear).gemms.requantize_w);
  EXPECT_TRUE(decide(saved, "layers.0.mlp.down", ModuleKind::linear).gemms.requantize_w);

  const Recipe& dataflow = recipe_by_name("int8-dataflow");
  EXPECT_EQ(dataflow.saved, SavedActivations::int8);
  EXPECT_TRUE(dataflow.gemms.requantize_w);
  for (GemmKind kind : kGemmKinds)
    EXPECT_EQ(dataflow.gemms[kind], recipe_by_name("int8-block").gemms[kind]);
  EXPECT_EQ(parse_recipe("int8-dataflow:saved=bf16").saved, SavedActivations::bf16);
  EXPECT_FALSE(parse_recipe("int8-dataflow:saved=bf16").gemms.requantize_w);
}

}  // namespace
}  // namespace lpbench::kernels

namespace lpbench::kernels {
namespace {

// Whatever a recipe's products run on when the device is the CPU, the store's one predicate reads
// it as emulated (the report marks such runs), and a BF16 recipe has nothing emulated.
TEST(RecipeBackends, EveryCpuBackendNameReadsAsEmulated) {
  std::vector<std::string> names = recipe_names();
  for (const char* modified : {"int8-tensor:wgrad=bf16", "int8-tensor:fprop=bf16",
                               "int8-fallback:ratio=8", "fp8-tensor:dgrad=bf16"}) {
    names.emplace_back(modified);
  }
  for (const std::string& name : names) {
    const Recipe recipe = parse_recipe(name);
    if (!recipe.gemms.any_quantized()) continue;
    const std::string backend = gemm_backends(recipe.gemms, at::Device(at::kCPU));
    EXPECT_TRUE(store::emulated_on_cpu(backend)) << name << ": " << backend;
  }
}

}  // namespace
}  // namespace lpbench::kernels
