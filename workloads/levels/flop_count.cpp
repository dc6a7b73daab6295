#include "workloads/levels/flop_count.h"

#include <string_view>

namespace lpbench::workloads {

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

void FlopCount::add(kernels::NumberFormat format, double flops) {
  switch (format) {
    case kernels::NumberFormat::bf16:
      bf16 += flops;
      break;
    case kernels::NumberFormat::int8:
      int8 += flops;
      break;
    case kernels::NumberFormat::fp8_e4m3:
    case kernels::NumberFormat::fp8_e5m2:
      fp8 += flops;
      break;
  }
}

FlopCount& FlopCount::operator+=(const FlopCount& other) {
  bf16 += other.bf16;
  int8 += other.int8;
  fp8 += other.fp8;
  return *this;
}

FlopCount linear_flops(double tokens, double in_features, double out_features,
                       const kernels::LinearGemms& gemms) {
  FlopCount count;
  const double one = 2.0 * tokens * in_features * out_features;
  for (kernels::GemmKind kind : kernels::kGemmKinds)
    count.add(gemms[kind].lhs, one);
  return count;
}

double attention_flops(const ModelConfig& model, double tokens, int64_t seq_len) {
  return 12.0 * static_cast<double>(model.num_heads * model.head_dim * seq_len) * tokens;
}

FlopCount decoder_flops(const ModelConfig& m, const std::vector<kernels::ModuleDecision>& modules,
                        double tokens, int64_t seq_len, int64_t layers) {
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  const double f = static_cast<double>(m.intermediate_size);
  // Each expert sees, on average, experts_per_token / num_experts of the tokens.
  const double expert_tokens = m.is_moe() ? tokens * static_cast<double>(m.experts_per_token) /
                                                static_cast<double>(m.num_experts)
                                          : tokens;
  FlopCount count;
  for (const kernels::ModuleDecision& d : modules) {
    if (d.kind != kernels::ModuleKind::linear) continue;
    const bool expert = d.module.find(".experts.") != std::string::npos;
    const double t = expert ? expert_tokens : tokens;
    if (ends_with(d.module, ".qkv")) count += linear_flops(t, h, q + 2 * kv, d.gemms);
    if (ends_with(d.module, ".out")) count += linear_flops(t, q, h, d.gemms);
    if (ends_with(d.module, ".gate_up")) count += linear_flops(t, h, 2 * f, d.gemms);
    if (ends_with(d.module, ".down")) count += linear_flops(t, f, h, d.gemms);
    if (ends_with(d.module, ".router")) {
      count += linear_flops(t, h, static_cast<double>(m.num_experts), d.gemms);
    }
    if (d.module == "output") {
      count += linear_flops(t, h, static_cast<double>(m.vocab_size), d.gemms);
    }
  }
  count.bf16 += static_cast<double>(layers) * attention_flops(m, tokens, seq_len);
  return count;
}

}  // namespace lpbench::workloads
