#pragma once

#include <ATen/ATen.h>

// The readable RMSNorm, forward and backward, in plain ATen operations on any device: the
// definition the CUDA kernels (kernels/cuda/rmsnorm.cuh) reproduce, and the fused operator's path
// where there is no kernel (the CPU).
//
//   h    = x + residual          (BF16, optional)
//   rstd = 1 / sqrt(mean(h²) + eps)          (FP32, per row)
//   y    = h · rstd · weight                 (FP32, rounded once to x's type)
// and, with xhat = h · rstd and g = dy · weight,
//   dh      = rstd · (g − xhat · mean(g · xhat)) + dh_in    (rounded once)
//   dweight = Σ_rows dy · xhat                              (FP32)
namespace lpbench::kernels::reference {

struct RmsNormOut {
  at::Tensor h;  // x + residual (x itself without a residual)
  at::Tensor y;
  at::Tensor rstd;  // [rows] FP32
};

// x and residual [..., cols] (BF16); weight [cols] (FP32); residual may be undefined.
RmsNormOut rmsnorm_forward(const at::Tensor& x, const at::Tensor& residual,
                           const at::Tensor& weight, double eps);

struct RmsNormGrads {
  at::Tensor dh;       // like h
  at::Tensor dweight;  // [cols] FP32
};

// dh_in may be undefined.
RmsNormGrads rmsnorm_backward(const at::Tensor& dy, const at::Tensor& h, const at::Tensor& weight,
                              const at::Tensor& rstd, const at::Tensor& dh_in);

}  // namespace lpbench::kernels::reference
