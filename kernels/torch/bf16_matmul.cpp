#include "kernels/torch/bf16_matmul.h"

namespace lpbench::kernels {

at::Tensor matmul_nt(const at::Tensor& a, const at::Tensor& b, at::ScalarType out) {
  if (a.is_cuda()) return out == a.scalar_type() ? at::mm(a, b.t()) : at::mm(a, b.t(), out);
  // libtorch's BF16 product on a CPU without AVX-512 is a scalar loop, 50-100× slower than its
  // FP32 sgemm; both accumulate in FP32 and round once, so widen, multiply, round.
  return at::mm(a.to(at::kFloat), b.t().to(at::kFloat)).to(out);
}

void matmul_nt_add(const at::Tensor& a, const at::Tensor& b, at::Tensor& c) {
  if (a.is_cuda() && a.scalar_type() != at::kFloat) {
    // addmm's out_dtype form: BF16 operands, FP32 accumulation into c itself (out is self).
    at::addmm_out(c, c, a, b.t(), at::kFloat, /*beta=*/1, /*alpha=*/1);
    return;
  }
  c.add_(matmul_nt(a, b, at::kFloat));
}

}  // namespace lpbench::kernels
