#include "kernels/torch/gemm.h"

#include <atomic>

#include "kernels/profiling/range.h"
#include "kernels/torch/bf16_matmul.h"
#include "kernels/torch/gemm_stats.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/quantize_hadamard.h"
#include "kernels/torch/scaled_gemm.h"

namespace lpbench::kernels {

namespace {

std::atomic<bool> g_layout_sharing{true};

NumberFormat format_of(const GemmSpec& spec, Side side) {
  return side == Side::lhs ? spec.lhs : spec.rhs;
}

// The residual product of int8-fallback: C += Q(R)·Bᵀ over the rows that hold outlier blocks,
// where R = A − dequantize(Q(A)) in the outlier blocks and 0 elsewhere.
void add_fallback_product(at::Tensor& c, const GemmOperand& a, const Quantized& qb,
                          const GemmSpec& spec, GemmKind kind, const std::string& module) {
  const Quantized& qa = *a.q;
  // scale = amax / 127 per 1 × k-block block, so comparing scales compares amaxes.
  const at::Tensor scales = qa.scales;
  const at::Tensor threshold = scales.flatten().median() * spec.outlier_ratio;
  const at::Tensor outliers = scales.gt(threshold);
  const at::Tensor rows = outliers.any(1).nonzero().flatten();
  const int64_t fallback = outliers.sum().item<int64_t>();
  record_fallback(module, kind, fallback, scales.numel());
  if (rows.numel() == 0) return;

  const at::Tensor a_rows = a.bf16.index_select(0, rows).to(at::kFloat);
  const Quantized qa_rows{qa.values.index_select(0, rows), qa.scales.index_select(0, rows),
                          qa.spec};
  const at::Tensor mask = outliers.index_select(0, rows)
                              .repeat_interleave(qa.block_cols(), 1)
                              .narrow(1, 0, a_rows.size(1));
  const at::Tensor residual =
      at::where(mask, a_rows - reference::dequantize(qa_rows, at::kFloat), at::zeros_like(a_rows));
  const Quantized qr = kernels::quantize(residual, qa.spec);
  c.index_add_(0, rows, scaled_gemm(qr, qb, at::kFloat));
}

// int8-fallback's left operand keeps its BF16 values beside the quantization, for the residual.
void keep_bf16_where_needed(GemmOperand& op, const at::Tensor& t, const GemmSpec& spec, Side side,
                            bool transpose) {
  if (spec.scaling == Scaling::fallback && side == Side::lhs) op.bf16 = transpose ? t.t() : t;
}

// The amax history an operand's quantization keeps: the product's, where the operand has one
// scale for the whole tensor; none where it is scaled otherwise (dy=row's dY, per row, beside
// delayed scaling's X and W).
AmaxHistory* history_for(const GemmSpec& spec, GemmKind kind, Side side, AmaxHistory* history) {
  if (spec.amax_history == 0) return nullptr;
  const QuantSpec q = operand_spec(spec, kind, side);
  return q.block_rows == 0 && q.block_cols == 0 ? history : nullptr;
}

}  // namespace

QuantSpec operand_spec(const GemmSpec& spec, GemmKind kind, Side side) {
  const NumberFormat format = format_of(spec, side);
  const Rounding rounding = side == Side::lhs ? spec.lhs_rounding : Rounding::nearest;
  switch (side == Side::lhs ? spec.scaling_of_lhs() : spec.scaling) {
    case Scaling::tensor:
      return {format, 0, 0, rounding};
    case Scaling::row:
      return {format, 1, 0, rounding};
    case Scaling::block:
    case Scaling::fallback: {
      const bool weight = side == Side::rhs && kind != GemmKind::wgrad;
      return {format, weight ? spec.k_block : 1, spec.k_block, rounding};
    }
    case Scaling::none:
      break;
  }
  TORCH_CHECK(false, "operand_spec: ", describe(spec), " is not quantized");
}

GemmOperand prepare_operand(const at::Tensor& t, const GemmSpec& spec, GemmKind kind, Side side,
                            bool transpose, AmaxHistory* history) {
  history = history_for(spec, kind, side, history);
  GemmOperand op;
  if (format_of(spec, side) == NumberFormat::bf16) {
    op.bf16 = transpose ? t.t() : t;
    return op;
  }
  if (spec.hadamard_block > 0) {
    // Rotated along K (the operand's columns as the product reads it), then quantized as it is.
    const profiling::Range range("quantize", std::string(to_string(kind)) + " (hadamard)");
    op.q = quantize_hadamard(t, transpose, spec.hadamard_block, operand_spec(spec, kind, side),
                             history);
    return op;
  }
  {
    const profiling::Range range("quantize", to_string(kind));
    op.q = kernels::quantize(t, operand_spec(spec, kind, side), transpose, history);
  }
  keep_bf16_where_needed(op, t, spec, side, transpose);
  return op;
}

void set_layout_sharing(bool enabled) {
  g_layout_sharing.store(enabled);
}

bool layout_sharing() {
  return g_layout_sharing.load();
}

namespace {

// Whether the two uses may share a quantization at all: both quantized, the same spec, no
// rotation (a rotated operand is rotated along each use's own K: never one for both).
bool may_share(const OperandUse& direct, const OperandUse& transposed) {
  return layout_sharing() && format_of(direct.spec, direct.side) != NumberFormat::bf16 &&
         format_of(transposed.spec, transposed.side) != NumberFormat::bf16 &&
         direct.spec.hadamard_block == 0 && transposed.spec.hadamard_block == 0 &&
         operand_spec(direct.spec, direct.kind, direct.side) ==
             operand_spec(transposed.spec, transposed.kind, transposed.side);
}

// For uses that may share: whether their common `spec` is per row both ways. That is not one
// quantization, but one amax pass and one pass make the two. (Stochastic rounding draws a seed
// per layout: apart.)
bool rowwise_both_ways(const QuantSpec& spec) {
  return is_rowwise(spec) && spec.rounding == Rounding::nearest;
}

}  // namespace

bool quantized_as_rowwise_pair(const OperandUse& direct, const OperandUse& transposed) {
  return may_share(direct, transposed) &&
         rowwise_both_ways(operand_spec(direct.spec, direct.kind, direct.side));
}

std::pair<GemmOperand, GemmOperand> prepare_operand_pair(const at::Tensor& t,
                                                         const OperandUse& direct,
                                                         const OperandUse& transposed,
                                                         AmaxHistory* history) {
  const auto apart = [&] {
    GemmOperand a = prepare_operand(t, direct.spec, direct.kind, direct.side, false, history);
    return std::make_pair(std::move(a),
                          prepare_operand(t, transposed.spec, transposed.kind, transposed.side,
                                          /*transpose=*/true, history));
  };
  if (!may_share(direct, transposed)) return apart();
  const QuantSpec spec = operand_spec(direct.spec, direct.kind, direct.side);
  const bool rowwise_pair = rowwise_both_ways(spec);
  if (!rowwise_pair && !transposes_exactly(spec)) return apart();
  const profiling::Range range("quantize", std::string(to_string(direct.kind)) + "+" +
                                               std::string(to_string(transposed.kind)));
  auto [q, qt] = rowwise_pair
                     ? kernels::quantize_rowwise_pair(t, spec)
                     : kernels::quantize_with_transpose(
                           t, spec, history_for(direct.spec, direct.kind, direct.side, history));
  GemmOperand a;
  GemmOperand b;
  a.q = std::move(q);
  b.q = std::move(qt);
  keep_bf16_where_needed(a, t, direct.spec, direct.side, false);
  keep_bf16_where_needed(b, t, transposed.spec, transposed.side, true);
  return {std::move(a), std::move(b)};
}

at::Tensor gemm_nt(const GemmOperand& a, const GemmOperand& b, const GemmSpec& spec,
                   at::ScalarType out_dtype, GemmKind kind, const std::string& module) {
  const profiling::Range range("gemm", to_string(kind));
  if (spec.rounds_rhs_only()) {
    // The `dy=bf16` ablation: a BF16 product of dY and the rounded W or X (whose values times
    // their scale round once more, to BF16: 8 bits where INT8 holds 7).
    TORCH_CHECK(b.q, "gemm_nt: ", describe(spec), " needs its right operand quantized");
    return matmul_nt(a.bf16, reference::dequantize(*b.q, a.bf16.scalar_type()), out_dtype);
  }
  if (!spec.quantized()) return matmul_nt(a.bf16, b.bf16, out_dtype);
  TORCH_CHECK(a.q && b.q, "gemm_nt: a quantized GEMM needs quantized operands");
  if (spec.scaling != Scaling::fallback) return scaled_gemm(*a.q, *b.q, out_dtype);
  // Both products in FP32, added, then rounded once.
  at::Tensor c = scaled_gemm(*a.q, *b.q, at::kFloat);
  {
    const profiling::Range fallback("fallback", module);
    add_fallback_product(c, a, *b.q, spec, kind, module);
  }
  return c.to(out_dtype);
}

void gemm_nt_add(const GemmOperand& a, const GemmOperand& b, const GemmSpec& spec, at::Tensor& c,
                 GemmKind kind, const std::string& module) {
  TORCH_CHECK(c.scalar_type() == at::kFloat && c.is_contiguous() && c.dim() == 2,
              "gemm_nt_add: C must be a contiguous FP32 matrix, got ", c.scalar_type(), " ",
              c.sizes());
  const bool bf16 = !spec.quantized() && !spec.rounds_rhs_only();
  const bool scaled = spec.quantized() && spec.scaling != Scaling::fallback;
  if (bf16 || scaled) {
    // A GEMM like any other, and one that adds into C (a region of its own for the timeline
    // and the hotspot table, within the GEMM's).
    const profiling::Range range("gemm", to_string(kind));
    const profiling::Range into("gemm into gradient", module);
    if (bf16) {
      matmul_nt_add(a.bf16, b.bf16, c);
    } else {
      TORCH_CHECK(a.q && b.q, "gemm_nt_add: a quantized GEMM needs quantized operands");
      scaled_gemm_add(*a.q, *b.q, c);
    }
    return;
  }
  // The dy=bf16 ablation and int8-fallback's two products: their FP32 sum, then added.
  c.add_(gemm_nt(a, b, spec, at::kFloat, kind, module));
}

}  // namespace lpbench::kernels
