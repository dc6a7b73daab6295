#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/recipe.h"
#include "kernels/reference/quantize.h"

// The kernel suite's one case table: every seed model's linear shapes × fprop/dgrad/wgrad ×
// recipes × variants, plus the quantize kernels on the operands those GEMMs read. The benchmark
// program registers its benchmarks from it and the tests check it, so the two cannot drift.
namespace lpbench::kernel_bench {

enum class Op { gemm, quantize };

// What a GEMM case times. A BF16 product and a quantize case have no variant ("none").
enum class Variant {
  none,
  prequantized,       // operands already in the GEMM's format: the product and its dequantization
  with_quantization,  // from BF16 sources: both operands quantized (transposes fused), then the
                      // product, as a training step pays for it
};

struct KernelCase {
  std::string name;  // unique; the benchmark's name
  Op op = Op::gemm;
  std::string model;
  std::string part;  // gemm: qkv, out, gate_up, down, output; quantize: the operands it serves
  std::optional<kernels::GemmKind> kind;  // gemm only
  std::string recipe;
  kernels::GemmSpec spec;               // gemm: the recipe's spec for `kind`
  kernels::reference::QuantSpec quant;  // quantize only
  Variant variant = Variant::none;
  int64_t m = 0, n = 0, k = 0;  // gemm: C[m,n] = A[m,k]·B[n,k]ᵀ; quantize: rows, cols, k = 0
  int64_t tokens = 0;
  // The layout the training step holds the sources in: dgrad reads Wᵀ, wgrad dYᵀ and Xᵀ, so
  // their quantization fuses a transpose (see kernels/torch/quantized_linear.cpp).
  bool lhs_transposed = false, rhs_transposed = false;
  // Quantize only: Xᵀ written too, from the same pass (square blocks and tensorwise), as a
  // training step quantizes an operand that two GEMMs read in both layouts.
  bool with_transpose = false;

  bool quantized() const { return op == Op::quantize || spec.quantized(); }
  // INT8 products count operations (TOP/s), the others floating-point ones (TFLOP/s).
  bool integer() const;
  // 2·m·n·k for a GEMM; 0 for a quantize case.
  double flops() const;
  // Bytes the timed work must read and write at the least: each input once and each output
  // once, in the formats the timed work starts and ends with (scales included).
  double bytes() const;
  // Bytes one buffer set holds (sources and prepared operands), for sizing the rotation.
  double set_bytes() const;
};

struct CaseFilter {
  std::vector<std::string> models;  // empty: the six seed models
  std::vector<int64_t> tokens{4096};
  std::vector<std::string> recipes;  // empty: default_recipes()
  std::vector<Op> ops{Op::gemm, Op::quantize};
  std::vector<Variant> variants{Variant::prequantized, Variant::with_quantization};
};

// bf16, int8-tensor, int8-row, int8-block, fp8-tensor.
const std::vector<std::string>& default_recipes();
// The built-in models that are not test models (the seed paper's six).
std::vector<std::string> seed_models();

// The cases of `filter`, in registration order: per model and token count, per linear part and
// GEMM, bf16 first (the twin), then each quantized recipe's variants; then the model's quantize
// cases, one per distinct (shape, scheme), each followed by its "+transpose" twin where the
// scheme transposes exactly. Throws InputError for an unknown model or recipe, or a
// token count below 1.
std::vector<KernelCase> kernel_cases(const CaseFilter& filter);

std::string_view to_string(Op op);
std::string_view to_string(Variant variant);
Op parse_op(std::string_view text);            // InputError naming the valid ones
Variant parse_variant(std::string_view text);  // prequantized or with_quantization
// "tensor", "row", "1x128", "128x128".
std::string describe_blocks(const kernels::reference::QuantSpec& spec);

}  // namespace lpbench::kernel_bench
