#include "kernels/recipe.h"

#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace lpbench::kernels {

namespace {

constexpr double kDefaultOutlierRatio = 4.0;

GemmSpec spec(NumberFormat lhs, NumberFormat rhs, Scaling scaling) {
  return {lhs, rhs, scaling, scaling == Scaling::fallback ? kDefaultOutlierRatio : 0.0};
}

LinearGemms int8(Scaling scaling) {
  const GemmSpec s = spec(NumberFormat::int8, NumberFormat::int8, scaling);
  return {s, s, s};
}

// SwitchBack quantizes the two products whose inner dimension is a model width (fprop, dgrad)
// and keeps wgrad, whose inner dimension is the batch's tokens, in 16 bits: summed over
// thousands of tokens, its rounding errors are the ones that grow.
LinearGemms switchback() {
  LinearGemms g = int8(Scaling::row);
  g.wgrad = GemmSpec{};
  return g;
}

// FP8 as Transformer Engine does it: E4M3 for weights and activations, E5M2 for the gradients,
// whose range matters more than their precision.
LinearGemms fp8(Scaling scaling) {
  return {spec(NumberFormat::fp8_e4m3, NumberFormat::fp8_e4m3, scaling),
          spec(NumberFormat::fp8_e5m2, NumberFormat::fp8_e4m3, scaling),
          spec(NumberFormat::fp8_e5m2, NumberFormat::fp8_e4m3, scaling)};
}

// Jetfire's data flow keeps nothing in BF16 between forward and backward that INT8 can hold.
LinearGemms dataflow(LinearGemms g) {
  g.requantize_w = true;
  return g;
}

// The seed paper's hierarchical precision: the embedding and the output layer see the widest
// value ranges and feed the loss directly, so they stay in BF16 while the decoder layers' linear
// layers are quantized.
std::vector<KeepRule> hierarchical_precision() {
  return {
      {"embedding", "hierarchical precision: the token embedding stays BF16 (seed paper)"},
      {"output", "hierarchical precision: the output layer stays BF16 (seed paper)"},
      router_rule(),
  };
}

std::vector<Recipe> build_named_recipes() {
  const std::vector<KeepRule> keep = hierarchical_precision();
  return {
      {"bf16",
       "every GEMM in BF16 with FP32 accumulation (the baseline)",
       LinearGemms::all_bf16(),
       {}},
      {"int8-tensor",
       "dynamic per-tensor INT8 for activations, weights and output gradients; INT32 "
       "accumulation; dequantized to BF16 (the seed paper)",
       int8(Scaling::tensor), keep},
      {"int8-row", "INT8 with a scale per token (activations, gradients) and per channel (weights)",
       int8(Scaling::row), keep},
      {"int8-block",
       "INT8 with 1×128 blocks for activations and gradients, 128×128 for weights; INT32 per "
       "K block, FP32 across blocks",
       int8(Scaling::block), keep},
      {"int8-fallback",
       "int8-block, with outlier blocks of the left operand (amax > 4 × the median block amax) "
       "computed to ~16 bits by a second INT8 product of the residual",
       int8(Scaling::fallback), keep},
      {"switchback",
       "INT8 fprop and dgrad with a scale per token and per channel, wgrad in BF16 (SwitchBack, "
       "Wortsman et al. 2023: the product that sums over tokens keeps 16 bits)",
       switchback(), keep},
      {"fp8-tensor", "FP8 E4M3 forward, E5M2 gradients, per-tensor current scaling",
       fp8(Scaling::tensor), keep},
      {"fp8-row", "FP8 E4M3/E5M2 with a scale per row along K", fp8(Scaling::row), keep},
      {"fp8-block", "FP8 E4M3/E5M2 with 1×128 and 128×128 blocks (DeepSeek-V3's scheme)",
       fp8(Scaling::block), keep},
      {"int8-dataflow",
       "int8-block, with the activations saved for backward (norm inputs, attention's q, k and "
       "v, SwiGLU's input) kept as INT8 in 1×128 blocks and dgrad's W made again in backward "
       "(Jetfire's data flow, Xi et al. 2024)",
       dataflow(int8(Scaling::block)), keep, SavedActivations::int8},
  };
}

GemmKind gemm_kind(std::string_view text, std::string_view recipe) {
  for (GemmKind kind : kGemmKinds) {
    if (to_string(kind) == text) return kind;
  }
  throw std::invalid_argument(
      fmt::format("recipe '{}': unknown GEMM '{}'; valid: fprop, dgrad, wgrad", recipe, text));
}

// The backward products (dgrad, wgrad) that run on quantized operands, which the `dy=...`,
// `dy-rounding=...` and `hadamard=...` modifiers change; none of them is an error naming the
// modifier.
std::vector<GemmSpec*> quantized_backward(Recipe& recipe, std::string_view key,
                                          std::string_view value, std::string_view text,
                                          std::string_view what) {
  std::vector<GemmSpec*> specs;
  for (GemmKind kind : {GemmKind::dgrad, GemmKind::wgrad}) {
    if (recipe.gemms[kind].quantized()) specs.push_back(&recipe.gemms[kind]);
  }
  if (specs.empty()) {
    throw std::invalid_argument(
        fmt::format("recipe '{}': {}={} needs a recipe that quantizes {}", text, key, value, what));
  }
  return specs;
}

// The `dy=...` and `dy-rounding=...` modifiers: how the output gradient dY, the left operand of
// dgrad and wgrad, is treated.
void modify_dy(Recipe& recipe, std::string_view key, std::string_view value,
               std::string_view text) {
  for (GemmSpec* spec : quantized_backward(recipe, key, value, text, "dY in dgrad or wgrad")) {
    GemmSpec& g = *spec;
    if (key == "dy" && value == "bf16") {
      g.lhs = NumberFormat::bf16;
      g.lhs_scaling = Scaling::none;
      g.lhs_rounding = Rounding::nearest;
    } else if (key == "dy" && value == "row") {
      if (g.lhs != NumberFormat::int8 || g.scaling != Scaling::tensor) {
        throw std::invalid_argument(fmt::format(
            "recipe '{}': dy=row applies to int8-tensor (dY per token, W and X per tensor)", text));
      }
      g.lhs_scaling = Scaling::row;
    } else if (key == "dy-rounding" && (value == "stochastic" || value == "nearest")) {
      if (g.lhs != NumberFormat::int8) {
        throw std::invalid_argument(fmt::format(
            "recipe '{}': stochastic rounding is implemented for INT8 gradients only", text));
      }
      g.lhs_rounding = value == "stochastic" ? Rounding::stochastic : Rounding::nearest;
    } else {
      throw std::invalid_argument(fmt::format(
          "recipe '{}': {}={} is not a choice; valid: dy=bf16, dy=row, dy-rounding=stochastic, "
          "dy-rounding=nearest",
          text, key, value));
    }
  }
}

// `hadamard=<b>`: dgrad's and wgrad's operands rotated in blocks of b before quantizing.
void modify_hadamard(Recipe& recipe, std::string_view value, std::string_view text) {
  int64_t block = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), block);
  if (error != std::errc() || end != value.data() + value.size() || block < 16 || block > 1024 ||
      (block & (block - 1)) != 0) {
    throw std::invalid_argument(fmt::format(
        "recipe '{}': hadamard must be a power of two from 16 to 1024, got '{}'", text, value));
  }
  if (recipe.gemms.fprop.scaling == Scaling::fallback) {
    throw std::invalid_argument(
        fmt::format("recipe '{}': hadamard does not combine with int8-fallback (its residual "
                    "product reads the unrotated operand)",
                    text));
  }
  for (GemmSpec* spec : quantized_backward(recipe, "hadamard", value, text, "dgrad or wgrad"))
    spec->hadamard_block = block;
}

// `k-block=<n>`: the K block of INT8 block scaling.
void modify_k_block(Recipe& recipe, std::string_view value, std::string_view text) {
  int64_t block = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), block);
  if (error != std::errc() || end != value.data() + value.size() ||
      (block != 128 && block != 256 && block != 512 && block != 1024)) {
    throw std::invalid_argument(
        fmt::format("recipe '{}': k-block must be 128, 256, 512 or 1024, got '{}'", text, value));
  }
  std::vector<GemmSpec*> blocked;
  for (GemmKind kind : kGemmKinds) {
    GemmSpec& g = recipe.gemms[kind];
    if (g.rhs == NumberFormat::int8 &&
        (g.scaling == Scaling::block || g.scaling == Scaling::fallback)) {
      blocked.push_back(&g);
    }
  }
  if (blocked.empty()) {
    throw std::invalid_argument(fmt::format(
        "recipe '{}': k-block applies to INT8 block scaling only (int8-block, int8-fallback, "
        "int8-dataflow); fp8-block's kernels take blocks of 128",
        text));
  }
  for (GemmSpec* g : blocked)
    g->k_block = block;
}

}  // namespace

// Routing decisions are discrete: a quantization error that flips an expert choice costs far
// more than it saves, so the router stays BF16 under every recipe.
KeepRule router_rule() {
  return {"*.router", "the MoE router stays BF16 under every recipe"};
}

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

GemmSpec& LinearGemms::operator[](GemmKind kind) {
  return const_cast<GemmSpec&>(static_cast<const LinearGemms&>(*this)[kind]);
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

Recipe parse_recipe(std::string_view text) {
  const size_t colon = text.find(':');
  const std::string_view base = text.substr(0, colon);
  const Recipe* named = nullptr;
  for (const Recipe& recipe : named_recipes()) {
    if (recipe.name == base) named = &recipe;
  }
  if (named == nullptr) {
    throw std::invalid_argument(fmt::format("unknown recipe '{}'; valid recipes: {}", base,
                                            fmt::join(recipe_names(), ", ")));
  }
  Recipe recipe = *named;
  recipe.name = std::string(text);
  if (colon == std::string_view::npos) return recipe;

  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (key == "quantize-all" && eq == std::string_view::npos) {
      recipe.keep_bf16 = {router_rule()};
    } else if (key == "ratio") {
      double ratio = 0.0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), ratio);
      if (error != std::errc() || end != value.data() + value.size() || !(ratio > 1.0) ||
          !std::isfinite(ratio)) {
        throw std::invalid_argument(
            fmt::format("recipe '{}': ratio must be a number above 1, got '{}'", text, value));
      }
      if (recipe.gemms.fprop.scaling != Scaling::fallback) {
        throw std::invalid_argument(
            fmt::format("recipe '{}': ratio applies to int8-fallback only", text));
      }
      for (GemmKind kind : kGemmKinds)
        recipe.gemms[kind].outlier_ratio = ratio;
    } else if (key == "amax-history") {
      int64_t length = 0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (error != std::errc() || end != value.data() + value.size() || length < 1 ||
          length > 1024) {
        throw std::invalid_argument(fmt::format(
            "recipe '{}': amax-history must be a whole number of steps from 1 to 1024, got '{}'",
            text, value));
      }
      if (recipe.gemms.fprop.scaling != Scaling::tensor) {
        throw std::invalid_argument(fmt::format(
            "recipe '{}': amax-history applies to tensor scaling only (int8-tensor, fp8-tensor)",
            text));
      }
      for (GemmKind kind : kGemmKinds) {
        if (recipe.gemms[kind].quantized()) recipe.gemms[kind].amax_history = length;
      }
    } else if (key == "hadamard") {
      modify_hadamard(recipe, value, text);
    } else if (key == "k-block") {
      modify_k_block(recipe, value, text);
    } else if (key == "saved") {
      if (value != "int8" && value != "bf16") {
        throw std::invalid_argument(fmt::format(
            "recipe '{}': saved={} is not a choice; valid: saved=int8, saved=bf16", text, value));
      }
      recipe.saved = value == "int8" ? SavedActivations::int8 : SavedActivations::bf16;
      recipe.gemms.requantize_w = recipe.saved == SavedActivations::int8;
    } else if (key == "dy" || key == "dy-rounding") {
      modify_dy(recipe, key, value, text);
    } else if (eq != std::string_view::npos && value == "bf16") {
      recipe.gemms[gemm_kind(key, text)] = GemmSpec{};
    } else {
      throw std::invalid_argument(fmt::format(
          "recipe '{}': unknown modifier '{}'; valid: fprop=bf16, dgrad=bf16, wgrad=bf16, "
          "ratio=<r>, quantize-all, amax-history=<n>, dy=bf16, dy=row, dy-rounding=stochastic, "
          "hadamard=<b>, k-block=<n>, saved=int8",
          text, item));
    }
  }
  for (GemmKind kind : kGemmKinds) {
    const GemmSpec& g = recipe.gemms[kind];
    if (g.hadamard_block > 0 && !g.quantized()) {
      throw std::invalid_argument(fmt::format(
          "recipe '{}': hadamard rotates both operands of a quantized product, and dy=bf16 "
          "leaves {} unquantized; drop one of them",
          text, to_string(kind)));
    }
    if (recipe.saved == SavedActivations::int8 && g.amax_history > 0) {
      throw std::invalid_argument(fmt::format(
          "recipe '{}': saved=int8 and amax-history do not combine (W, made again in backward, "
          "would enter its history twice a step); drop one of them",
          text));
    }
    if (g.lhs_rounding == Rounding::stochastic && g.amax_history > 0) {
      throw std::invalid_argument(fmt::format(
          "recipe '{}': dy-rounding=stochastic and amax-history do not combine (delayed scaling "
          "rounds to nearest); drop one of them",
          text));
    }
  }
  return recipe;
}

std::string_view to_string(NumberFormat format) {
  switch (format) {
    case NumberFormat::bf16:
      return "bf16";
    case NumberFormat::int8:
      return "int8";
    case NumberFormat::fp8_e4m3:
      return "e4m3";
    case NumberFormat::fp8_e5m2:
      return "e5m2";
  }
  return "?";
}

std::string_view to_string(Scaling scaling) {
  switch (scaling) {
    case Scaling::none:
      return "none";
    case Scaling::tensor:
      return "tensor";
    case Scaling::row:
      return "row";
    case Scaling::block:
      return "block";
    case Scaling::fallback:
      return "fallback";
  }
  return "?";
}

std::string_view to_string(Rounding rounding) {
  switch (rounding) {
    case Rounding::nearest:
      return "nearest";
    case Rounding::stochastic:
      return "stochastic";
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

std::vector<std::string> regroup_recipe_list(const std::vector<std::string>& items) {
  std::vector<std::string> recipes;
  for (const std::string& item : items) {
    const std::string_view base = std::string_view(item).substr(0, item.find(':'));
    const bool named = std::any_of(named_recipes().begin(), named_recipes().end(),
                                   [&](const Recipe& recipe) { return recipe.name == base; });
    if (!named && !recipes.empty() && recipes.back().find(':') != std::string::npos) {
      recipes.back() += "," + item;
    } else {
      recipes.push_back(item);
    }
  }
  return recipes;
}

std::string describe(const GemmSpec& spec) {
  if (spec.rounds_rhs_only()) {
    return fmt::format("bf16×{}/{}(bf16 product)", to_string(spec.rhs), to_string(spec.scaling));
  }
  if (!spec.quantized()) return std::string(to_string(spec.lhs));
  const std::string formats = spec.lhs == spec.rhs
                                  ? std::string(to_string(spec.lhs))
                                  : fmt::format("{}×{}", to_string(spec.lhs), to_string(spec.rhs));
  const std::string rounding =
      (spec.lhs_rounding == Rounding::stochastic ? "(stochastic)" : "") +
      (spec.hadamard_block > 0 ? fmt::format("(hadamard {})", spec.hadamard_block) : "") +
      (spec.k_block != 128 ? fmt::format("(K block {})", spec.k_block) : "");
  if (spec.scaling == Scaling::fallback) {
    return fmt::format("{}/fallback({:g}){}", formats, spec.outlier_ratio, rounding);
  }
  const std::string scaling =
      spec.lhs_scaling == Scaling::none
          ? std::string(to_string(spec.scaling))
          : fmt::format("{}×{}", to_string(spec.lhs_scaling), to_string(spec.scaling));
  if (spec.amax_history > 0) {
    return fmt::format("{}/{}(history {}){}", formats, scaling, spec.amax_history, rounding);
  }
  return fmt::format("{}/{}{}", formats, scaling, rounding);
}

std::string describe(const LinearGemms& gemms) {
  return fmt::format("fprop={} dgrad={} wgrad={}{}", describe(gemms.fprop), describe(gemms.dgrad),
                     describe(gemms.wgrad), gemms.requantize_w ? " (W again in backward)" : "");
}

}  // namespace lpbench::kernels
