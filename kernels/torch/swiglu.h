#pragma once

#include <ATen/ATen.h>

// SwiGLU on the fused gate/up product as one differentiable operator: silu(gate) · up, forward
// and backward each one pass on the GPU (kernels/cuda/swiglu.cuh), the reference elsewhere.
namespace lpbench::kernels {

// gate_up [..., 2·inner] (gate first) → [..., inner]. `report_amax`: the kernels also report
// max |out| (and the backward max |d gate_up|) for a tensorwise quantization (amax_registry.h).
// `int8_saved`: gate_up is kept for backward as INT8 blocks (saved_activation.h), and the
// backward differentiates at the restored gate_up.
at::Tensor swiglu(const at::Tensor& gate_up, bool report_amax = false, bool int8_saved = false);

}  // namespace lpbench::kernels
