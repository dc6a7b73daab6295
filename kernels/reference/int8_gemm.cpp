#include "kernels/reference/int8_gemm.h"

namespace lpbench::kernels::reference {

namespace {

void check_operands(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "int8_gemm takes 2-D operands, got ", a.sizes(),
              " and ", b.sizes());
  TORCH_CHECK(a.scalar_type() == at::kChar && b.scalar_type() == at::kChar,
              "int8_gemm takes int8 operands");
  TORCH_CHECK(a.size(1) == b.size(1), "int8_gemm: K mismatch, A is ", a.sizes(), ", B is ",
              b.sizes(), " (C = A·Bᵀ)");
  TORCH_CHECK(a.size(1) <= kInt8GemmMaxK, "int8_gemm: K=", a.size(1),
              " could overflow an INT32 accumulator (at most ", kInt8GemmMaxK, ")");
}

}  // namespace

at::Tensor int8_gemm(const at::Tensor& a, const at::Tensor& b) {
  check_operands(a, b);
  const at::ScalarType exact = a.size(1) <= kInt8GemmFp32ExactMaxK ? at::kFloat : at::kDouble;
  return at::mm(a.to(exact), b.to(exact).t()).to(at::kInt);
}

at::Tensor int8_gemm_int64(const at::Tensor& a, const at::Tensor& b) {
  check_operands(a, b);
  at::Tensor b64 = b.to(at::kLong);
  at::Tensor c = at::empty({a.size(0), b.size(0)}, a.options().dtype(at::kLong));
  // One output row at a time (bounded memory): multiply and sum, no floating point anywhere.
  for (int64_t i = 0; i < a.size(0); ++i) {
    c[i] = (a[i].to(at::kLong).unsqueeze(0) * b64).sum(1);
  }
  return c;
}

}  // namespace lpbench::kernels::reference
