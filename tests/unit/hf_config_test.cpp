// Importing Hugging Face config.json files: each family, and each way a file can be wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"
#include "workloads/models/hf_config.h"

namespace lpbench::workloads {
namespace {

using nlohmann::json;

json llama2_7b() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 32000,
    "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 32, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "tie_word_embeddings": false, "rope_scaling": null})");
}

std::string error_of(const json& j) {
  try {
    parse_hf_config(j, "config.json");
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(HfConfig, LlamaMatchesTheBuiltInModel) {
  const ModelConfig imported = parse_hf_config(llama2_7b(), "config.json").config;
  EXPECT_EQ(imported.family, "llama");
  EXPECT_EQ(imported.parameter_count(), builtin_model("llama2-7b").parameter_count());
  EXPECT_EQ(imported.head_dim, 128);  // derived: hidden / heads
}

TEST(HfConfig, Llama31ReadsItsRopeScaling) {
  json j = llama2_7b();
  j["vocab_size"] = 128256;
  j["intermediate_size"] = 14336;
  j["num_key_value_heads"] = 8;
  j["rope_theta"] = 500000.0;
  j["rope_scaling"] = json::parse(R"({"factor": 8.0, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"})");
  const ModelConfig c = parse_hf_config(j, "config.json").config;
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.parameter_count(), builtin_model("llama3.1-8b").parameter_count());
}

TEST(HfConfig, MistralQwenAndMixtralFamilies) {
  json mistral = llama2_7b();
  mistral["model_type"] = "mistral";
  mistral["num_key_value_heads"] = 8;
  mistral["sliding_window"] = 4096;
  const ImportedModel m = parse_hf_config(mistral, "mistral.json");
  EXPECT_EQ(m.config.family, "mistral");
  EXPECT_NE(m.notes.find("sliding-window"), std::string::npos);

  json qwen3 = json::parse(R"({"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 2560,
    "intermediate_size": 9728, "num_hidden_layers": 36, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
    "tie_word_embeddings": true})");
  const ModelConfig q = parse_hf_config(qwen3, "qwen3.json").config;
  EXPECT_TRUE(q.qk_norm);
  EXPECT_TRUE(q.tie_embeddings);
  EXPECT_EQ(q.parameter_count(), builtin_model("qwen3-4b").parameter_count());

  json qwen2 = qwen3;
  qwen2["model_type"] = "qwen2";
  const ImportedModel q2 = parse_hf_config(qwen2, "qwen2.json");
  EXPECT_FALSE(q2.config.qk_norm);
  EXPECT_NE(q2.notes.find("biases"), std::string::npos);

  json mixtral = llama2_7b();
  mixtral["model_type"] = "mixtral";
  mixtral["intermediate_size"] = 14336;
  mixtral["num_key_value_heads"] = 8;
  mixtral["num_local_experts"] = 8;
  mixtral["num_experts_per_tok"] = 2;
  const ModelConfig x = parse_hf_config(mixtral, "mixtral.json").config;
  EXPECT_EQ(x.num_experts, 8);
  EXPECT_NEAR(static_cast<double>(x.parameter_count()) / 1e9, 46.7, 0.47);
}

TEST(HfConfig, NamesTheMissingOrIllTypedField) {
  json missing = llama2_7b();
  missing.erase("hidden_size");
  EXPECT_EQ(error_of(missing), "config.json: field 'hidden_size' is missing");

  json wrong = llama2_7b();
  wrong["num_hidden_layers"] = "32";
  EXPECT_NE(error_of(wrong).find("field 'num_hidden_layers' must be an integer, got string"),
            std::string::npos);

  json fractional = llama2_7b();
  fractional["vocab_size"] = 32000.5;
  EXPECT_NE(error_of(fractional).find("'vocab_size' must be an integer"), std::string::npos);

  json mixtral = llama2_7b();
  mixtral["model_type"] = "mixtral";
  EXPECT_NE(error_of(mixtral).find("'num_local_experts' is missing"), std::string::npos);

  json inconsistent = llama2_7b();
  inconsistent["num_key_value_heads"] = 5;
  EXPECT_NE(error_of(inconsistent).find("not a multiple"), std::string::npos);
}

TEST(HfConfig, RefusesUnsupportedArchitecturesAndScalings) {
  json gpt2 = json::parse(R"({"model_type": "gpt2", "n_embd": 768})");
  EXPECT_NE(error_of(gpt2).find("unsupported architecture 'gpt2'; supported: llama, mistral"),
            std::string::npos);
  json by_arch = json::parse(R"({"architectures": ["FalconForCausalLM"]})");
  EXPECT_NE(error_of(by_arch).find("unsupported architecture 'FalconForCausalLM'"),
            std::string::npos);
  json yarn = llama2_7b();
  yarn["rope_scaling"] = json::parse(R"({"type": "yarn", "factor": 4.0})");
  EXPECT_NE(error_of(yarn).find("unsupported rope_scaling"), std::string::npos);
  EXPECT_NE(error_of(json::array()).find("one JSON object"), std::string::npos);
}

TEST(HfConfig, ResolvesNamesAndFiles) {
  testing::TempDir dir;
  testing::write_file(dir / "config.json", llama2_7b().dump());
  EXPECT_EQ(resolve_model(dir / "config.json").config.hidden_size, 4096);
  EXPECT_EQ(resolve_model("qwen3-8b").config.name, "qwen3-8b");
  testing::write_file(dir / "broken.json", "{\"vocab_size\": 12,");
  try {
    resolve_model(dir / "broken.json");
    FAIL();
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("not valid JSON"), std::string::npos);
  }
  EXPECT_THROW(resolve_model("gpt-9"), std::invalid_argument);
  EXPECT_THROW(resolve_model(dir / "absent.json"), std::invalid_argument);
}

}  // namespace
}  // namespace lpbench::workloads
