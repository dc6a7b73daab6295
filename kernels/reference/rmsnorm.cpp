#include "kernels/reference/rmsnorm.h"

namespace lpbench::kernels::reference {

RmsNormOut rmsnorm_forward(const at::Tensor& x, const at::Tensor& residual,
                           const at::Tensor& weight, double eps) {
  RmsNormOut out;
  out.h = residual.defined() ? x + residual : x;
  const at::Tensor hf = out.h.to(at::kFloat);
  const int64_t cols = hf.size(-1);
  const at::Tensor rstd = 1.0 / (hf.pow(2).sum(-1, /*keepdim=*/true) / cols + eps).sqrt();
  out.y = (hf * rstd * weight).to(x.scalar_type());
  out.rstd = rstd.reshape({-1});
  return out;
}

RmsNormGrads rmsnorm_backward(const at::Tensor& dy, const at::Tensor& h, const at::Tensor& weight,
                              const at::Tensor& rstd, const at::Tensor& dh_in) {
  const int64_t cols = h.size(-1);
  const at::Tensor r = rstd.reshape({-1, 1});
  const at::Tensor xhat = h.reshape({-1, cols}).to(at::kFloat) * r;
  const at::Tensor dyf = dy.reshape({-1, cols}).to(at::kFloat);
  const at::Tensor g = dyf * weight;
  const at::Tensor mean = (g * xhat).sum(-1, /*keepdim=*/true) / cols;
  at::Tensor dh = r * (g - xhat * mean);
  if (dh_in.defined()) dh = dh + dh_in.reshape({-1, cols}).to(at::kFloat);
  return {dh.to(h.scalar_type()).view(h.sizes()), (dyf * xhat).sum(0)};
}

}  // namespace lpbench::kernels::reference
