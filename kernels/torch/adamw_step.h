#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

// One AdamW step (decoupled weight decay, bias-corrected moments, every gradient divided by a
// device scalar: the clipping) over lists of FP32 tensors, writing each updated master's BF16
// copy where it has one. On the GPU: lpbench's multi-tensor kernel, one launch that also writes
// the copies (kernels/cuda/adamw.cuh); elsewhere, and as the kernel's test oracle: libtorch's
// fused AdamW (at::_fused_adamw_) followed by the copies.
namespace lpbench::kernels {

struct AdamwHyper {
  double lr = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

// `grads[i]`: dense, or, for a [rows, width] tensor, a coalesced sparse gradient by rows (the
// embedding's, kernels/torch/embedding.h): the rows it leaves out have a zero gradient.
// `copies[i]`: tensor i's BF16 copy, or undefined (none, or its memory given back: a copy made
// where it is used, workloads/models/layer_copies.h). `steps[i]`: tensor i's step count
// including this step. `grad_scale`: a one-element FP32 tensor on the tensors' device.
// `copy_amax`: the kernel also finds each copy's max |x| and remembers it for the copy
// (kernels/torch/amax_registry.h), so that a tensorwise quantization of the copy skips its amax
// pass; the ablation `--no-producer-amax` turns it off with the fused kernels' reports.
void adamw_step(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                const std::vector<at::Tensor>& exp_avgs, const std::vector<at::Tensor>& exp_avg_sqs,
                const std::vector<at::Tensor>& copies, const std::vector<int64_t>& steps,
                const AdamwHyper& hyper, const at::Tensor& grad_scale, bool copy_amax = false);

// Whether adamw_step runs lpbench's kernel for tensors on `device`.
bool adamw_on_kernel(const at::Device& device);

}  // namespace lpbench::kernels
