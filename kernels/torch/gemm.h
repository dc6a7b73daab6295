#pragma once

#include <ATen/ATen.h>

#include "kernels/recipe.h"

// One GEMM of a recipe, from operands to BF16 result: the building block of the quantized
// linear layer and of the gemm level.
namespace lpbench::kernels {

// An operand in the format a GEMM spec wants: BF16 values, or INT8 values with their scale.
struct GemmOperand {
  at::Tensor values;
  at::Tensor scale;  // undefined for BF16
};

// Quantizes `t` when the spec is quantized; passes it through otherwise.
GemmOperand prepare_operand(const at::Tensor& t, const GemmSpec& spec);

// A transposed view. Tensorwise scales do not change under transposition; the INT8 GEMM makes
// its operands K-contiguous itself, the BF16 one needs no copy.
GemmOperand transposed(const GemmOperand& op);

// C[M,N] = A[M,K] · B[N,K]ᵀ under `spec`, as `out_dtype`.
at::Tensor gemm_nt(const GemmOperand& a, const GemmOperand& b, const GemmSpec& spec,
                   at::ScalarType out_dtype);

}  // namespace lpbench::kernels
