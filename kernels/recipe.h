#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace lpbench::kernels {

// Number format of a GEMM operand. BF16 products accumulate in FP32; INT8 products accumulate
// exactly in INT32; FP8 (E4M3 for weights and activations, E5M2 for gradients) in FP32.
enum class NumberFormat { bf16, int8, fp8_e4m3, fp8_e5m2 };

// How a quantized operand's scales are shared:
//   tensor   one scale per operand (the seed paper's scheme);
//   row      one per row along K: per token for activations and gradients, per channel for weights;
//   block    1×128 for the left operand (activations, gradients), 128×128 for weights, 1×128 for
//            the activation on the right of wgrad;
//   fallback block, plus a second INT8 product of the quantization residual for the left
//            operand's outlier blocks, which brings them to about 16-bit precision.
enum class Scaling { none, tensor, row, block, fallback };

// How a scaled value is rounded to the INT8 grid: to nearest (half to even), or stochastically,
// up with a probability equal to its distance from the integer below, so that the rounded value
// is unbiased (its mean is the value). Stochastic rounding is for INT8 only.
enum class Rounding { nearest, stochastic };

// The three GEMMs of a linear layer Y = X·Wᵀ.
enum class GemmKind { fprop, dgrad, wgrad };
inline constexpr std::array<GemmKind, 3> kGemmKinds{GemmKind::fprop, GemmKind::dgrad,
                                                    GemmKind::wgrad};

// How one GEMM C = A·Bᵀ is computed. A (lhs) is X in fprop and dY in dgrad and wgrad; B (rhs) is
// W in fprop and dgrad and X in wgrad.
struct GemmSpec {
  NumberFormat lhs = NumberFormat::bf16;
  NumberFormat rhs = NumberFormat::bf16;
  Scaling scaling = Scaling::none;
  // fallback: a left-operand block whose amax exceeds outlier_ratio × the median block amax of
  // its tensor is an outlier block.
  double outlier_ratio = 0.0;
  // tensor only: delayed scaling, as Transformer Engine does it. Each operand with one scale for
  // the whole tensor is scaled by the largest amax of its last `amax_history` quantizations
  // instead of its own, and its own amax is found by the quantizing pass itself (no amax pass);
  // values beyond the stale amax saturate. An operand scaled otherwise (dy=row's dY) keeps its
  // own scales. 0: every operand by its own amax (dynamic scaling).
  int64_t amax_history = 0;
  // The left operand's own scaling where it differs from `scaling` (none: the same). The `dy=row`
  // ablation of int8-tensor scales dY per token in dgrad and per output channel in wgrad while W
  // and X keep one scale per tensor.
  Scaling lhs_scaling = Scaling::none;
  // How the left operand is rounded (dY in dgrad and wgrad under `dy-rounding=stochastic`); the
  // right operand always rounds to nearest.
  Rounding lhs_rounding = Rounding::nearest;
  // dgrad and wgrad under `hadamard=<b>`: both operands rotated by the block Hadamard matrix of
  // size b along the dimension the product sums over before they are quantized
  // (kernels/reference/hadamard.h); the product is unchanged, outliers are spread. 0: none.
  int64_t hadamard_block = 0;
  // block and fallback scaling: the K block of the scales (activations and gradients 1 × k_block,
  // weights k_block × k_block, so that fprop's W and dgrad's Wᵀ are one quantization). A power of
  // two from 128 to 1024: an INT8 partial over one K block is at most k_block·127² < 2²⁴, exact in
  // FP32. A longer block folds the partials into FP32 less often and shares a scale more widely.
  int64_t k_block = 128;

  // Whether the product runs on quantized operands (an INT8 or FP8 GEMM).
  bool quantized() const { return lhs != NumberFormat::bf16; }
  // The `dy=bf16` ablation: the left operand stays BF16 while the right one is rounded to `rhs`
  // (as it is for the quantized products), and the product runs in BF16 on the rounded values.
  bool rounds_rhs_only() const { return lhs == NumberFormat::bf16 && rhs != NumberFormat::bf16; }
  Scaling scaling_of_lhs() const { return lhs_scaling == Scaling::none ? scaling : lhs_scaling; }
  friend bool operator==(const GemmSpec&, const GemmSpec&) = default;
};

// The specs of fprop (Y = X·Wᵀ), dgrad (dX = dY·W) and wgrad (dW = dYᵀ·X) for one layer.
struct LinearGemms {
  GemmSpec fprop, dgrad, wgrad;
  // Under saved=int8, dgrad's quantized W is made again in backward from the BF16 weight instead
  // of being saved from forward: the same bits (W has not changed; nearest rounding), no copy of
  // the layer's weights held between forward and backward.
  bool requantize_w = false;

  const GemmSpec& operator[](GemmKind kind) const;
  GemmSpec& operator[](GemmKind kind);
  bool any_quantized() const {
    for (const GemmSpec* s : {&fprop, &dgrad, &wgrad}) {
      if (s->quantized() || s->rounds_rhs_only()) return true;
    }
    return false;
  }
  static LinearGemms all_bf16() { return {}; }
  friend bool operator==(const LinearGemms&, const LinearGemms&) = default;
};

// Modules a recipe keeps in BF16, matched by glob pattern on the module's name (for example
// "output" or "layers.*.moe.router"), each with the reason that the store records.
struct KeepRule {
  std::string pattern;
  std::string reason;
};

enum class ModuleKind { linear, embedding };

// How the fused operators (RMSNorm, attention, SwiGLU) keep what their backward reads: as it is
// (BF16), or as INT8 in 1×128 blocks with an FP32 scale each (Jetfire's data flow; the linear
// layers then also make dgrad's W again in backward: LinearGemms::requantize_w).
enum class SavedActivations { bf16, int8 };

struct Recipe {
  std::string name;  // as given, modifiers included: "int8-tensor:wgrad=bf16"
  std::string summary;
  LinearGemms gemms;
  std::vector<KeepRule> keep_bf16;
  SavedActivations saved = SavedActivations::bf16;
};

// What a recipe does to one module of a model: the row the store keeps for every run.
struct ModuleDecision {
  std::string module;
  ModuleKind kind = ModuleKind::linear;
  LinearGemms gemms;  // what its GEMMs actually run in (all BF16 when kept)
  bool quantized = false;
  std::string reason;
};

ModuleDecision decide(const Recipe& recipe, std::string_view module, ModuleKind kind);

// The rule every recipe carries: MoE routers stay BF16.
KeepRule router_rule();

// The named recipes. recipe_by_name throws std::out_of_range for an unknown name.
const std::vector<Recipe>& named_recipes();
const Recipe& recipe_by_name(std::string_view name);
std::vector<std::string> recipe_names();

// A named recipe, optionally with modifiers after a colon, comma-separated:
//   <gemm>=bf16        keep that GEMM (fprop, dgrad or wgrad) in BF16, e.g. int8-tensor:wgrad=bf16
//   ratio=<r>          the outlier ratio of int8-fallback (default 4)
//   quantize-all       drop the keep rules (embedding and output layer quantized too; the router
//                      stays BF16)
//   amax-history=<n>   delayed scaling over the last n steps' amaxes (tensor scaling only;
//                      1..1024; GemmSpec::amax_history); with dy=row, X and W only
//   dy=bf16            the output gradient dY stays BF16 in dgrad and wgrad; W and X are still
//                      rounded as the recipe rounds them (GemmSpec::rounds_rhs_only)
//   dy=row             dY scaled per token (dgrad) and per output channel (wgrad), W and X per
//                      tensor (int8-tensor only; GemmSpec::lhs_scaling)
//   dy-rounding=stochastic|nearest
//                      how dY is rounded in dgrad and wgrad (INT8 only; GemmSpec::lhs_rounding)
//   hadamard=<b>       dgrad's and wgrad's operands rotated in blocks of b (a power of two, 16 to
//                      1024) along their summed dimension before quantizing
//                      (GemmSpec::hadamard_block; not with int8-fallback)
//   k-block=<n>        the K block of int8-block's and int8-fallback's scales (GemmSpec::k_block;
//                      128, 256, 512 or 1024; default 128)
//   saved=int8|bf16    what the fused operators save for backward (SavedActivations; not with
//                      amax-history, whose W history would count the backward's W twice)
// Throws std::invalid_argument naming what is wrong and the valid choices.
Recipe parse_recipe(std::string_view text);

// A comma-separated recipe list as a command line splits it, each recipe's modifiers put back
// with it: {"bf16", "int8-tensor:dy=row", "saved=int8"} → {"bf16",
// "int8-tensor:dy=row,saved=int8"}. An item whose name (before any ':') is not a named recipe
// continues the item before it where that one has modifiers; anything else stays as given, for
// parse_recipe to judge.
std::vector<std::string> regroup_recipe_list(const std::vector<std::string>& items);

std::string_view to_string(NumberFormat format);
std::string_view to_string(Scaling scaling);
std::string_view to_string(Rounding rounding);
std::string_view to_string(GemmKind kind);
std::string_view to_string(ModuleKind kind);
std::string describe(const GemmSpec& spec);      // "int8/tensor", "e5m2×e4m3/row", "bf16"
std::string describe(const LinearGemms& gemms);  // "fprop=int8/tensor dgrad=... wgrad=..."

}  // namespace lpbench::kernels

template <>
struct fmt::formatter<lpbench::kernels::GemmSpec> : fmt::formatter<std::string_view> {
  auto format(const lpbench::kernels::GemmSpec& spec, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(lpbench::kernels::describe(spec), ctx);
  }
};

template <>
struct fmt::formatter<lpbench::kernels::LinearGemms> : fmt::formatter<std::string_view> {
  auto format(const lpbench::kernels::LinearGemms& gemms, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(lpbench::kernels::describe(gemms), ctx);
  }
};
