#pragma once

#include <ATen/ATen.h>

// SwiGLU on the fused gate/up product as one differentiable operator: silu(gate) · up, forward
// and backward each one pass on the GPU (kernels/cuda/swiglu.cuh), the reference elsewhere.
namespace lpbench::kernels {

// gate_up [..., 2·inner] (gate first) → [..., inner].
at::Tensor swiglu(const at::Tensor& gate_up);

}  // namespace lpbench::kernels
