#include "kernels/reference/qk_norm_rope.h"

#include "kernels/reference/rmsnorm.h"
#include "kernels/reference/rope.h"

namespace lpbench::kernels::reference {

QkNormRopeOut qk_norm_rope_forward(const at::Tensor& x, const at::Tensor& weight, double eps,
                                   const at::Tensor& cos, const at::Tensor& sin) {
  const RmsNormOut n = rmsnorm_forward(x.contiguous(), at::Tensor(), weight, eps);
  return {rope(n.y, cos, sin), n.rstd.reshape({-1})};
}

QkNormRopeGrads qk_norm_rope_backward(const at::Tensor& dy, const at::Tensor& x,
                                      const at::Tensor& weight, const at::Tensor& rstd,
                                      const at::Tensor& cos, const at::Tensor& sin) {
  const at::Tensor g = rope(dy, cos, sin, /*inverse=*/true);
  const RmsNormGrads grads =
      rmsnorm_backward(g.contiguous(), x.contiguous(), weight, rstd, at::Tensor());
  return {grads.dh, grads.dweight};
}

}  // namespace lpbench::kernels::reference
