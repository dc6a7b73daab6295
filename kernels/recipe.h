#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace lpbench::kernels {

// Number format of both operands of one GEMM. BF16 products accumulate in FP32; INT8 products
// accumulate exactly in INT32 and are dequantized to BF16.
enum class NumberFormat { bf16, int8 };

// How a quantized operand's scale is shared: one per tensor (the seed paper's scheme).
enum class Scaling { none, tensor };

// The three GEMMs of a linear layer Y = X·Wᵀ.
enum class GemmKind { fprop, dgrad, wgrad };
inline constexpr std::array<GemmKind, 3> kGemmKinds{GemmKind::fprop, GemmKind::dgrad,
                                                    GemmKind::wgrad};

struct GemmSpec {
  NumberFormat format = NumberFormat::bf16;
  Scaling scaling = Scaling::none;

  bool quantized() const { return format != NumberFormat::bf16; }
  friend bool operator==(const GemmSpec&, const GemmSpec&) = default;
};

// The specs of fprop (Y = X·Wᵀ), dgrad (dX = dY·W) and wgrad (dW = dYᵀ·X) for one layer.
struct LinearGemms {
  GemmSpec fprop, dgrad, wgrad;

  const GemmSpec& operator[](GemmKind kind) const;
  bool any_quantized() const { return fprop.quantized() || dgrad.quantized() || wgrad.quantized(); }
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

struct Recipe {
  std::string name;
  std::string summary;
  LinearGemms gemms;
  std::vector<KeepRule> keep_bf16;
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

// The named recipes. recipe_by_name throws std::out_of_range for an unknown name.
const std::vector<Recipe>& named_recipes();
const Recipe& recipe_by_name(std::string_view name);
std::vector<std::string> recipe_names();

std::string_view to_string(NumberFormat format);
std::string_view to_string(Scaling scaling);
std::string_view to_string(GemmKind kind);
std::string_view to_string(ModuleKind kind);
std::string describe(const GemmSpec& spec);      // "int8/tensor", "bf16"
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
