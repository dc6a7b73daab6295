// The built-in models against their published parameter counts.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "workloads/models/model_config.h"
#include "workloads/models/rope.h"

namespace lpbench::workloads {
namespace {

struct Published {
  const char* model;
  double total_billions;
  double active_billions;  // equal to total for dense models
  int64_t layers;          // depth of the published count
};

void PrintTo(const Published& p, std::ostream* os) {
  *os << p.model;
}

class ModelZoo : public ::testing::TestWithParam<Published> {};

TEST_P(ModelZoo, ParameterCountsMatchThePublishedTotalsWithinOnePercent) {
  const Published p = GetParam();
  const ModelConfig config = builtin_model(p.model).with_layers(p.layers);
  EXPECT_EQ(check_model_config(config), "");
  const double total = static_cast<double>(config.parameter_count()) / 1e9;
  const double active = static_cast<double>(config.parameter_count(/*active=*/true)) / 1e9;
  EXPECT_NEAR(total, p.total_billions, 0.01 * p.total_billions) << p.model;
  EXPECT_NEAR(active, p.active_billions, 0.01 * p.active_billions) << p.model;
  // FLOPs per token: 6 per active matmul parameter plus attention.
  EXPECT_GT(config.flops_per_token(4096),
            6.0 * static_cast<double>(config.matmul_parameter_count(true)));
}

INSTANTIATE_TEST_SUITE_P(SeedModels, ModelZoo,
                         ::testing::Values(Published{"llama2-7b", 6.74, 6.74, 32},
                                           Published{"llama2-13b", 13.0, 13.0, 40},
                                           Published{"llama3.1-8b", 8.03, 8.03, 32},
                                           Published{"qwen3-4b", 4.02, 4.02, 36},
                                           Published{"qwen3-8b", 8.19, 8.19, 36},
                                           // Mixtral-8x7B at its full depth of 32 layers.
                                           Published{"mixtral-8x7b-8l", 46.7, 12.9, 32}),
                         [](const auto& test_info) {
                           std::string name = test_info.param.model;
                           for (char& c : name)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

TEST(ModelZoo, MixtralRunsEightOfItsThirtyTwoLayers) {
  const ModelConfig& m = builtin_model("mixtral-8x7b-8l");
  EXPECT_EQ(m.num_layers, 8);
  EXPECT_EQ(m.published_layers, 32);
  EXPECT_EQ(m.num_experts, 8);
  EXPECT_EQ(m.experts_per_token, 2);
}

TEST(ModelZoo, QwenTiesAndNormsWhereItShould) {
  EXPECT_TRUE(builtin_model("qwen3-4b").tie_embeddings);
  EXPECT_FALSE(builtin_model("qwen3-8b").tie_embeddings);
  EXPECT_TRUE(builtin_model("qwen3-8b").qk_norm);
  EXPECT_FALSE(builtin_model("llama2-7b").qk_norm);
}

TEST(ModelZoo, SmallIsAboutAHundredMillionParameters) {
  const double params = static_cast<double>(builtin_model("small").parameter_count());
  EXPECT_GT(params, 80e6);
  EXPECT_LT(params, 140e6);
}

TEST(Rope, Llama3ScalingStretchesLongWavelengthsOnly) {
  const ModelConfig& llama31 = builtin_model("llama3.1-8b");
  ModelConfig unscaled = llama31;
  unscaled.rope_scaling = {};
  const torch::Tensor scaled = rope_inverse_frequencies(llama31);
  const torch::Tensor plain = rope_inverse_frequencies(unscaled);
  const int64_t last = plain.size(0) - 1;
  // The highest frequency (shortest wavelength) is kept; the lowest is divided by the factor 8.
  EXPECT_DOUBLE_EQ(scaled[0].item<double>(), plain[0].item<double>());
  EXPECT_NEAR(scaled[last].item<double>(), plain[last].item<double>() / 8.0, 1e-15);
  // And the band between is monotone, as a blend of the two should be.
  EXPECT_TRUE((scaled.slice(0, 1) <= scaled.slice(0, 0, last)).all().item<bool>());
}

}  // namespace
}  // namespace lpbench::workloads
