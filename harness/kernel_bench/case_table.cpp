#include "harness/kernel_bench/case_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "base/errors.h"
#include "kernels/torch/gemm.h"
#include "kernels/torch/quantize.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace lpbench::kernel_bench {

namespace {

using kernels::GemmKind;
using kernels::GemmSpec;
using kernels::NumberFormat;
using kernels::Side;
using kernels::reference::QuantSpec;

double element_bytes(NumberFormat format) {
  return format == NumberFormat::bf16 ? 2.0 : 1.0;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Scales of an operand [rows, cols] quantized under `spec`.
double scale_count(int64_t rows, int64_t cols, const QuantSpec& spec) {
  const int64_t br = spec.block_rows > 0 ? spec.block_rows : rows;
  const int64_t bc = spec.block_cols > 0 ? spec.block_cols : cols;
  return static_cast<double>(ceil_div(rows, br) * ceil_div(cols, bc));
}

// Whether one call also writes the operand's transpose (a "+transpose" twin): where Xᵀ's
// quantization is X's transposed (square blocks, tensorwise), and X per row with Xᵀ per row
// (the row pair: both from one read, kernels::quantize_rowwise_pair).
bool has_transposed_twin(const QuantSpec& q) {
  return kernels::transposes_exactly(q) ||
         (kernels::is_rowwise(q) && q.rounding == kernels::Rounding::nearest);
}

const workloads::ModelConfig& model_named(const std::string& name) {
  try {
    return workloads::builtin_model(name);
  } catch (const std::out_of_range&) {
    throw InputError(fmt::format("--models: unknown model '{}'; valid: {}", name,
                                 fmt::join(workloads::builtin_model_names(), ", ")));
  }
}

kernels::Recipe recipe_named(const std::string& name) {
  try {
    return kernels::parse_recipe(name);
  } catch (const std::exception& error) {
    throw InputError(fmt::format("--recipes: {}", error.what()));
  }
}

struct QuantizeKey {
  std::string recipe;
  int64_t rows, cols;
  NumberFormat format;
  int64_t br, bc;
  auto tie() const { return std::tie(recipe, rows, cols, format, br, bc); }
  bool operator<(const QuantizeKey& o) const { return tie() < o.tie(); }
};

}  // namespace

bool KernelCase::integer() const {
  return op == Op::gemm ? spec.lhs == NumberFormat::int8 : quant.format == NumberFormat::int8;
}

double KernelCase::flops() const {
  if (op != Op::gemm) return 0.0;
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

double KernelCase::bytes() const {
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  if (op == Op::quantize) {
    // The transposed copy's scales: the same count where blocks transpose into blocks, a row's
    // each of Xᵀ for the rowwise pair.
    const double copies = with_transpose ? 2.0 : 1.0;
    return mn * (2.0 + copies * element_bytes(quant.format)) +
           4.0 * (scale_count(m, n, quant) + (with_transpose ? scale_count(n, m, quant) : 0.0));
  }
  const double mk = static_cast<double>(m) * static_cast<double>(k);
  const double nk = static_cast<double>(n) * static_cast<double>(k);
  if (variant == Variant::prequantized) {
    const QuantSpec a = kernels::operand_spec(spec, *kind, Side::lhs);
    const QuantSpec b = kernels::operand_spec(spec, *kind, Side::rhs);
    return mk * element_bytes(spec.lhs) + nk * element_bytes(spec.rhs) +
           4.0 * (scale_count(m, k, a) + scale_count(n, k, b)) + 2.0 * mn;
  }
  return 2.0 * (mk + nk + mn);  // BF16 sources in, BF16 product out
}

double KernelCase::set_bytes() const {
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  if (op == Op::quantize) return 2.0 * mn;
  const double mk = static_cast<double>(m) * static_cast<double>(k);
  const double nk = static_cast<double>(n) * static_cast<double>(k);
  if (variant == Variant::prequantized) {
    return mk * element_bytes(spec.lhs) + nk * element_bytes(spec.rhs);
  }
  return 2.0 * (mk + nk);
}

const std::vector<std::string>& default_recipes() {
  static const std::vector<std::string> names{"bf16", "int8-tensor", "int8-row", "int8-block",
                                              "fp8-tensor"};
  return names;
}

std::vector<std::string> seed_models() {
  std::vector<std::string> names;
  for (const std::string& name : workloads::builtin_model_names()) {
    if (workloads::builtin_model(name).family != "lpbench") names.push_back(name);
  }
  return names;
}

std::string describe_blocks(const QuantSpec& spec) {
  if (spec.block_rows == 0 && spec.block_cols == 0) return "tensor";
  if (spec.block_rows == 1 && spec.block_cols == 0) return "row";
  return fmt::format("{}x{}", spec.block_rows, spec.block_cols);
}

std::vector<KernelCase> kernel_cases(const CaseFilter& filter) {
  const std::vector<std::string> models = filter.models.empty() ? seed_models() : filter.models;
  std::vector<kernels::Recipe> recipes;
  // bf16 always runs: it is the twin every quantized figure is compared with.
  recipes.push_back(kernels::recipe_by_name("bf16"));
  for (const std::string& name :
       filter.recipes.empty() ? default_recipes() : kernels::regroup_recipe_list(filter.recipes)) {
    kernels::Recipe recipe = recipe_named(name);
    if (std::none_of(recipes.begin(), recipes.end(),
                     [&](const kernels::Recipe& r) { return r.name == recipe.name; })) {
      recipes.push_back(std::move(recipe));
    }
  }
  if (filter.tokens.empty()) throw InputError("--tokens: give at least one token count");
  for (int64_t tokens : filter.tokens) {
    if (tokens < 1) {
      throw InputError(
          fmt::format("--tokens: {} is not a token count; give counts of 1 or more, "
                      "e.g. --tokens 4096,16384",
                      tokens));
    }
  }
  const auto wants = [](const auto& list, auto value) {
    return std::find(list.begin(), list.end(), value) != list.end();
  };

  std::vector<KernelCase> cases;
  for (const std::string& model_name : models) {
    const workloads::ModelConfig& model = model_named(model_name);
    const std::vector<workloads::LinearShape> linears = workloads::linear_shapes(model);
    if (wants(filter.ops, Op::gemm)) {
      for (int64_t tokens : filter.tokens) {
        for (const workloads::LinearShape& linear : linears) {
          for (const auto& [kind, shape] : workloads::training_gemms(linear, tokens)) {
            for (const kernels::Recipe& recipe : recipes) {
              const GemmSpec& spec = recipe.gemms[kind];
              // A quantized recipe that keeps this GEMM in BF16 would repeat the twin.
              if (recipe.name != "bf16" && !spec.quantized()) continue;
              KernelCase c;
              c.op = Op::gemm;
              c.model = model.name;
              c.part = linear.part;
              c.kind = kind;
              c.recipe = recipe.name;
              c.spec = spec;
              c.m = shape.m;
              c.n = shape.n;
              c.k = shape.k;
              c.tokens = tokens;
              c.lhs_transposed = kind == GemmKind::wgrad;
              c.rhs_transposed = kind != GemmKind::fprop;
              const std::string base = fmt::format("gemm/{}/{}/{}/T{}/{}", model.name, linear.part,
                                                   kernels::to_string(kind), tokens, recipe.name);
              if (!spec.quantized()) {
                c.name = base;
                cases.push_back(c);
                continue;
              }
              for (Variant variant : {Variant::prequantized, Variant::with_quantization}) {
                if (!wants(filter.variants, variant)) continue;
                c.variant = variant;
                c.name = fmt::format("{}/{}", base, to_string(variant));
                cases.push_back(c);
              }
            }
          }
        }
      }
    }
    if (!wants(filter.ops, Op::quantize)) continue;
    // The quantize kernels on the operands of fprop: each distinct activation X[T, in] and each
    // weight W[out, in], under each quantized recipe's scheme for that side.
    std::map<QuantizeKey, size_t> seen;
    for (const kernels::Recipe& recipe : recipes) {
      const GemmSpec& spec = recipe.gemms.fprop;
      if (!spec.quantized()) continue;
      auto add = [&](int64_t rows, int64_t cols, Side side, const std::string& operand,
                     int64_t tokens) {
        const QuantSpec q = kernels::operand_spec(spec, GemmKind::fprop, side);
        const QuantizeKey key{recipe.name, rows, cols, q.format, q.block_rows, q.block_cols};
        if (auto it = seen.find(key); it != seen.end()) {
          cases[it->second].part += "," + operand;
          // Its "+transpose" twin, registered right after it.
          if (has_transposed_twin(q)) cases[it->second + 1].part += "," + operand;
          return;
        }
        KernelCase c;
        c.op = Op::quantize;
        c.model = model.name;
        c.part = operand;
        c.recipe = recipe.name;
        c.spec = spec;
        c.quant = q;
        c.m = rows;
        c.n = cols;
        c.tokens = tokens;
        c.name = fmt::format("quantize/{}/{}x{}/{}/{}", model.name, rows, cols, recipe.name,
                             describe_blocks(q));
        seen[key] = cases.size();
        cases.push_back(c);
        if (has_transposed_twin(q)) {
          c.with_transpose = true;
          c.name += "+transpose";
          cases.push_back(c);
        }
      };
      for (int64_t tokens : filter.tokens) {
        for (const workloads::LinearShape& linear : linears)
          add(tokens, linear.in_features, Side::lhs, "x." + linear.part, tokens);
      }
      for (const workloads::LinearShape& linear : linears)
        add(linear.out_features, linear.in_features, Side::rhs, "w." + linear.part, 0);
    }
  }
  return cases;
}

std::string_view to_string(Op op) {
  return op == Op::gemm ? "gemm" : "quantize";
}

std::string_view to_string(Variant variant) {
  switch (variant) {
    case Variant::none:
      return "none";
    case Variant::prequantized:
      return "prequantized";
    case Variant::with_quantization:
      return "with_quantization";
  }
  return "?";
}

Op parse_op(std::string_view text) {
  if (text == "gemm") return Op::gemm;
  if (text == "quantize") return Op::quantize;
  throw InputError(fmt::format("--ops: unknown '{}'; valid: gemm, quantize", text));
}

Variant parse_variant(std::string_view text) {
  if (text == "prequantized") return Variant::prequantized;
  if (text == "with_quantization") return Variant::with_quantization;
  throw InputError(
      fmt::format("--variants: unknown '{}'; valid: prequantized, with_quantization", text));
}

}  // namespace lpbench::kernel_bench
