#include "kernels/recipe.h"

#include <fnmatch.h>

#include <stdexcept>

namespace lpbench::kernels {

namespace {

constexpr GemmSpec kInt8Tensor{NumberFormat::int8, Scaling::tensor};

// The seed paper's hierarchical precision: the embedding and the output layer see the widest
// value ranges and feed the loss directly, so they stay in BF16 while the decoder layers' linear
// layers are quantized.
std::vector<KeepRule> hierarchical_precision() {
  return {
      {"embedding", "hierarchical precision: the token embedding stays BF16 (seed paper)"},
      {"output", "hierarchical precision: the output layer stays BF16 (seed paper)"},
  };
}

// Routing decisions are discrete: a quantization error that flips an expert choice costs far
// more than it saves, so the router stays BF16 under every recipe (seed paper, Mixtral).
KeepRule router_rule() {
  return {"*.router", "the MoE router stays BF16 under every recipe"};
}

std::vector<KeepRule> hierarchical_precision_with_router() {
  std::vector<KeepRule> rules = hierarchical_precision();
  rules.push_back(router_rule());
  return rules;
}

std::vector<Recipe> build_named_recipes() {
  return {
      Recipe{"bf16",
             "every GEMM in BF16 with FP32 accumulation (the baseline)",
             LinearGemms::all_bf16(),
             {}},
      Recipe{"int8-tensor",
             "dynamic per-tensor INT8 for activations, weights and output gradients; "
             "INT8xINT8->INT32 for fprop, dgrad and wgrad; dequantized to BF16",
             LinearGemms{kInt8Tensor, kInt8Tensor, kInt8Tensor},
             hierarchical_precision_with_router()},
  };
}

}  // namespace

const GemmSpec& LinearGemms::operator[](GemmKind kind) const {
  switch (kind) {
    case GemmKind::fprop:
      return fprop;
    case GemmKind::dgrad:
      return dgrad;
    case GemmKind::wgrad:
      return wgrad;
  }
  throw std::logic_error("unknown GemmKind");
}

ModuleDecision decide(const Recipe& recipe, std::string_view module, ModuleKind kind) {
  ModuleDecision decision{std::string(module), kind, LinearGemms::all_bf16(), false, ""};
  if (!recipe.gemms.any_quantized()) {
    decision.reason = fmt::format("recipe {} computes every GEMM in BF16", recipe.name);
    return decision;
  }
  for (const KeepRule& rule : recipe.keep_bf16) {
    if (fnmatch(rule.pattern.c_str(), decision.module.c_str(), 0) == 0) {
      decision.reason = rule.reason;
      return decision;
    }
  }
  if (kind == ModuleKind::embedding) {
    // A lookup has no matrix product to quantize; only a tied output layer would, and that is
    // decided under the name of the output layer.
    decision.reason = "an embedding lookup is not a matrix product";
    return decision;
  }
  decision.gemms = recipe.gemms;
  decision.quantized = true;
  decision.reason = fmt::format("quantized by recipe {}", recipe.name);
  return decision;
}

const std::vector<Recipe>& named_recipes() {
  static const std::vector<Recipe> recipes = build_named_recipes();
  return recipes;
}

const Recipe& recipe_by_name(std::string_view name) {
  for (const Recipe& recipe : named_recipes()) {
    if (recipe.name == name) return recipe;
  }
  throw std::out_of_range(fmt::format("unknown recipe '{}'", name));
}

std::vector<std::string> recipe_names() {
  std::vector<std::string> names;
  for (const Recipe& recipe : named_recipes())
    names.push_back(recipe.name);
  return names;
}

std::string_view to_string(NumberFormat format) {
  switch (format) {
    case NumberFormat::bf16:
      return "bf16";
    case NumberFormat::int8:
      return "int8";
  }
  return "?";
}

std::string_view to_string(Scaling scaling) {
  switch (scaling) {
    case Scaling::none:
      return "none";
    case Scaling::tensor:
      return "tensor";
  }
  return "?";
}

std::string_view to_string(GemmKind kind) {
  switch (kind) {
    case GemmKind::fprop:
      return "fprop";
    case GemmKind::dgrad:
      return "dgrad";
    case GemmKind::wgrad:
      return "wgrad";
  }
  return "?";
}

std::string_view to_string(ModuleKind kind) {
  switch (kind) {
    case ModuleKind::linear:
      return "linear";
    case ModuleKind::embedding:
      return "embedding";
  }
  return "?";
}

std::string describe(const GemmSpec& spec) {
  if (!spec.quantized()) return std::string(to_string(spec.format));
  return fmt::format("{}/{}", to_string(spec.format), to_string(spec.scaling));
}

std::string describe(const LinearGemms& gemms) {
  return fmt::format("fprop={} dgrad={} wgrad={}", describe(gemms.fprop), describe(gemms.dgrad),
                     describe(gemms.wgrad));
}

}  // namespace lpbench::kernels
