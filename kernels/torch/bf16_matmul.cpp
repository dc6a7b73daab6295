#include "kernels/torch/bf16_matmul.h"

namespace lpbench::kernels {

at::Tensor matmul_nt(const at::Tensor& a, const at::Tensor& b, at::ScalarType out) {
  if (out == a.scalar_type()) return at::mm(a, b.t());
  if (a.is_cuda()) return at::mm(a, b.t(), out);
  return at::mm(a.to(out), b.t().to(out));
}

}  // namespace lpbench::kernels
