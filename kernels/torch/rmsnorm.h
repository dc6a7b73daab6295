#pragma once

#include <ATen/ATen.h>

#include <utility>

#include "kernels/torch/quantize.h"

// RMSNorm as one differentiable operator: lpbench's CUDA kernel on the GPU (one pass forward,
// one backward, the residual add folded in), the reference (kernels/reference/rmsnorm.h)
// elsewhere.
namespace lpbench::kernels {

// y = x / rms(x) · weight over the last dimension; x BF16, weight FP32 [cols].
// `report_amax`: the kernels also report max |y| (and the backward max |dx|) for a tensorwise
// quantization of them to find (amax_registry.h). `int8_saved`: the input is kept for backward
// as INT8 blocks (saved_activation.h), and the backward differentiates at the restored input.
// `consumer`: how the product that reads y quantizes it; where the GPU kernel can write that
// quantization (quantize_rmsnorm_with_transpose) it does so in y's place, y is a stand-in only
// that product may read (quantized_stand_in), and the norm's kernel writes h and rstd only.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps,
                    bool report_amax = false, bool int8_saved = false,
                    const InputQuantization& consumer = {});

// (x, y = RMSNorm(x)·weight) for an x that also goes on along the residual path: the x returned
// carries that path's gradient into the norm's backward pass, which adds it to the norm's own
// (as add_rms_norm's does), so that autograd runs no sum of x's two gradients of its own.
std::pair<at::Tensor, at::Tensor> rms_norm_residual(const at::Tensor& x, const at::Tensor& weight,
                                                    double eps, bool report_amax = false,
                                                    bool int8_saved = false,
                                                    const InputQuantization& consumer = {});

// h = x + residual and y = RMSNorm(h)·weight, in one pass; the backward adds the gradient
// reaching h along the residual path to the norm's own, also in one pass.
std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& residual,
                                               const at::Tensor& weight, double eps,
                                               bool report_amax = false, bool int8_saved = false,
                                               const InputQuantization& consumer = {});

}  // namespace lpbench::kernels
