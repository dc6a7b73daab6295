#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <utility>

#include "kernels/recipe.h"
#include "kernels/reference/quantize.h"
#include "kernels/torch/amax_history.h"

// One GEMM of a recipe, from a source tensor to the product: which block shape each operand is
// quantized with, the quantization, and the product itself (with int8-fallback's residual
// product). The building block of the quantized linear layer and of the gemm level.
namespace lpbench::kernels {

using reference::Quantized;
using reference::QuantSpec;

// The left (A) or right (B) operand of C = A·Bᵀ.
enum class Side { lhs, rhs };

// How operand `side` of GEMM `kind` is quantized under `spec`, in the operand's own coordinates
// ([rows, K]): tensorwise {0,0}; rowwise {1,0}; blockwise 1×128 for the left operand (X, dY),
// 128×128 for the weight (the right operand of fprop and dgrad), 1×128 for the activation on the
// right of wgrad.
QuantSpec operand_spec(const GemmSpec& spec, GemmKind kind, Side side);

// An operand in the format its GEMM wants: BF16 values, or quantized ones. The left operand of
// an int8-fallback GEMM keeps its BF16 values too, for the residual.
struct GemmOperand {
  at::Tensor bf16;  // [rows, K], possibly a transposed view
  std::optional<Quantized> q;
};

// `t` is the operand's source: [rows, K] as it is, or [K, rows] with `transpose` (dgrad's Wᵀ,
// wgrad's dYᵀ and Xᵀ). The transpose is fused into the quantization on the GPU. `history`:
// the operand's delayed-scaling state, used where spec.amax_history > 0 (quantize.h).
GemmOperand prepare_operand(const at::Tensor& t, const GemmSpec& spec, GemmKind kind, Side side,
                            bool transpose, AmaxHistory* history = nullptr);

// One use of an operand: the GEMM, which side, and under which spec.
struct OperandUse {
  GemmSpec spec;
  GemmKind kind = GemmKind::fprop;
  Side side = Side::lhs;
};

// A source read by two GEMMs, as it is by `direct` and transposed by `transposed`: fprop's X and
// wgrad's Xᵀ, fprop's W and dgrad's Wᵀ, dgrad's dY and wgrad's dYᵀ. Where both uses quantize
// it the same way and that quantization transposes exactly (tensorwise, square blocks), it is
// quantized once for both (one pass writing both layouts on the GPU); otherwise as two
// prepare_operand calls.
//
// set_layout_sharing(false) turns the shared quantization off process-wide (an ablation: each
// layout gets its own pass; the operands are the same bits). Under delayed scaling each pass
// would record into the history, so the run configuration refuses that combination.
void set_layout_sharing(bool enabled);
bool layout_sharing();
std::pair<GemmOperand, GemmOperand> prepare_operand_pair(const at::Tensor& t,
                                                         const OperandUse& direct,
                                                         const OperandUse& transposed,
                                                         AmaxHistory* history = nullptr);
// Whether prepare_operand_pair quantizes the source per row for `direct` and per row of its
// transpose for `transposed` in one call (int8-row's operands, dY under dy=row): the
// quantization a producer's report of each row's and column's amax saves a pass for.
bool quantized_as_rowwise_pair(const OperandUse& direct, const OperandUse& transposed);

// C[M,N] = A·Bᵀ under `spec`, as `out_dtype`. For int8-fallback, left-operand blocks whose amax
// exceeds outlier_ratio × the median block amax get a second INT8 product of their quantization
// residual; how many did is recorded for `module` (see gemm_stats.h).
at::Tensor gemm_nt(const GemmOperand& a, const GemmOperand& b, const GemmSpec& spec,
                   at::ScalarType out_dtype, GemmKind kind = GemmKind::fprop,
                   const std::string& module = "");

// C += A·Bᵀ under `spec`, C an FP32 [M,N] contiguous tensor (a weight's gradient summed over
// micro-batches). BF16 on the GPU: one cuBLAS product with beta = 1, which reads C in its
// epilogue (no product written out and added after); cuBLAS may pick another algorithm for
// beta = 1, so it agrees with gemm_nt's FP32 result plus C to FP32 rounding, not bit for bit.
// Elsewhere (INT8, FP8, the CPU): the product, then C.add_, the bits of gemm_nt's FP32 result
// added to C (see scaled_gemm_add for lpbench's INT8 kernel adding in its epilogue).
void gemm_nt_add(const GemmOperand& a, const GemmOperand& b, const GemmSpec& spec, at::Tensor& c,
                 GemmKind kind = GemmKind::wgrad, const std::string& module = "");

}  // namespace lpbench::kernels
