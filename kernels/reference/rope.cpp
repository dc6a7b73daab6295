#include "kernels/reference/rope.h"

namespace lpbench::kernels::reference {

at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, bool inverse) {
  const int64_t seq = x.size(1);
  const int64_t half = x.size(-1) / 2;
  // [T, D/2] → [1, T, 1, D/2] to broadcast over batch and heads.
  const at::Tensor c = cos.narrow(0, 0, seq).unsqueeze(0).unsqueeze(2);
  const at::Tensor s = sin.narrow(0, 0, seq).unsqueeze(0).unsqueeze(2);
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor x1 = xf.narrow(-1, 0, half);
  const at::Tensor x2 = xf.narrow(-1, half, half);
  const at::Tensor y1 = inverse ? x1 * c + x2 * s : x1 * c - x2 * s;
  const at::Tensor y2 = inverse ? x2 * c - x1 * s : x2 * c + x1 * s;
  return at::cat({y1, y2}, -1).to(x.scalar_type());
}

}  // namespace lpbench::kernels::reference
