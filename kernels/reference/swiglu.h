#pragma once

#include <ATen/ATen.h>

// The readable SwiGLU on the fused gate/up product (gate in the first half of the last dimension,
// up in the second), in plain ATen operations on any device, as the CUDA kernels
// (kernels/cuda/swiglu.cuh) compute it:
//   out    = silu(gate) · up                 (silu rounded to x's type first, as torch's silu
//                                             of a BF16 tensor is; the product rounded again)
//   d_up   = d_out · silu(gate)              (that same rounded silu)
//   d_gate = d_out · up · σ(gate) · (1 + gate · (1 − σ(gate)))   (FP32, rounded once)
namespace lpbench::kernels::reference {

at::Tensor swiglu_forward(const at::Tensor& gate_up);
at::Tensor swiglu_backward(const at::Tensor& d_out, const at::Tensor& gate_up);

}  // namespace lpbench::kernels::reference
