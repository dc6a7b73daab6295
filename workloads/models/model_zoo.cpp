#include "workloads/models/model_zoo.h"

namespace lpbench::workloads {

namespace {

// Dimensions from each model's published config.json (Hugging Face), cited by field name.
ModelConfig dense(std::string name, std::string family, int64_t vocab, int64_t hidden,
                  int64_t intermediate, int64_t layers, int64_t heads, int64_t kv_heads,
                  int64_t head_dim, double rope_theta, double norm_eps) {
  ModelConfig c;
  c.name = std::move(name);
  c.family = std::move(family);
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_layers = layers;
  c.published_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.rope_theta = rope_theta;
  c.norm_eps = norm_eps;
  c.default_micro_batch = 1;
  c.default_seq_len = 4096;
  c.default_lr = 3e-4;
  return c;
}

std::vector<ModelConfig> build() {
  std::vector<ModelConfig> zoo;

  zoo.push_back(dense("llama2-7b", "llama", 32000, 4096, 11008, 32, 32, 32, 128, 1e4, 1e-5));
  zoo.push_back(dense("llama2-13b", "llama", 32000, 5120, 13824, 40, 40, 40, 128, 1e4, 1e-5));

  ModelConfig llama31 =
      dense("llama3.1-8b", "llama", 128256, 4096, 14336, 32, 32, 8, 128, 5e5, 1e-5);
  llama31.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 8192};
  zoo.push_back(llama31);

  ModelConfig qwen4 = dense("qwen3-4b", "qwen3", 151936, 2560, 9728, 36, 32, 8, 128, 1e6, 1e-6);
  qwen4.tie_embeddings = true;
  qwen4.qk_norm = true;
  zoo.push_back(qwen4);

  ModelConfig qwen8 = dense("qwen3-8b", "qwen3", 151936, 4096, 12288, 36, 32, 8, 128, 1e6, 1e-6);
  qwen8.qk_norm = true;
  zoo.push_back(qwen8);

  // Mixtral-8x7B with 8 of its 32 layers, as the seed paper ran it.
  ModelConfig mixtral =
      dense("mixtral-8x7b-8l", "mixtral", 32000, 4096, 14336, 8, 32, 8, 128, 1e6, 1e-5);
  mixtral.published_layers = 32;
  mixtral.num_experts = 8;
  mixtral.experts_per_token = 2;
  zoo.push_back(mixtral);

  // A few million parameters: trains in seconds on two CPU cores, for tests and the demo.
  ModelConfig tiny = dense("tiny", "lpbench", 512, 256, 704, 4, 8, 4, 32, 1e4, 1e-5);
  tiny.vocab_follows_data = true;
  tiny.default_micro_batch = 8;
  tiny.default_seq_len = 64;
  tiny.default_lr = 3e-3;
  zoo.push_back(tiny);

  // About 100M parameters (GPT-2 small's size, Llama's shape), for convergence runs.
  ModelConfig small = dense("small", "lpbench", 32000, 768, 2048, 12, 12, 4, 64, 1e4, 1e-5);
  small.vocab_follows_data = true;
  small.default_micro_batch = 16;
  small.default_seq_len = 512;
  small.default_lr = 1e-3;
  zoo.push_back(small);

  // A tiny mixture of experts, to test routing on the CPU.
  ModelConfig tiny_moe = tiny;
  tiny_moe.name = "tiny-moe";
  tiny_moe.num_experts = 4;
  tiny_moe.experts_per_token = 2;
  zoo.push_back(tiny_moe);
  return zoo;
}

}  // namespace

const std::vector<ModelConfig>& model_zoo() {
  static const std::vector<ModelConfig> zoo = build();
  return zoo;
}

}  // namespace lpbench::workloads
