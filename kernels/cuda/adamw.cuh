#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace lpbench::cuda {

// One tensor of an AdamW step: its FP32 master, gradient and moments, and, where the products
// read a BF16 copy of it, that copy, written from the updated master in the same pass (the
// refresh that would otherwise read every master again).
struct AdamwTensor {
  float* param = nullptr;
  const float* grad = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  void* bf16_copy = nullptr;  // optional: [numel] bf16
  // Optional, with bf16_copy: max |copy| as FP32 bits (kernels/cuda/amax.cuh), folded in by one
  // atomicMax a block; the caller zeroes it. A tensorwise quantization of the copy then needs no
  // amax pass of its own.
  uint32_t* copy_amax = nullptr;
  int64_t numel = 0;
  // Optional, a gradient by rows (an embedding's: the rows its tokens reached): the tensor is
  // [numel / row_width, row_width] and row r's gradient is row grad_rows[r] of `grad`, or zero
  // where grad_rows[r] < 0; the moments and the weight decay still move every row, as a dense
  // gradient with those zeros would move them, to the bit.
  const int32_t* grad_rows = nullptr;
  int64_t row_width = 0;
  float step_size = 0.0F;   // lr / (1 − β1^step), this tensor's step count
  float bias_sqrt = 0.0F;   // sqrt(1 − β2^step)
  int64_t first_block = 0;  // set by the launcher
  int32_t vectorized = 0;   // set by the launcher: 16-byte aligned, numel a multiple of 4
};

struct AdamwArgs {
  float lr = 0.0F;
  float beta1 = 0.0F;
  float beta2 = 0.0F;
  float eps = 0.0F;
  float weight_decay = 0.0F;
  // Every gradient is divided by *grad_scale where given (the clipping: 1 / min(1, clip / norm),
  // computed on the device, so the step needs no copy of the norm to the host).
  const float* grad_scale = nullptr;
};

// One multi-tensor AdamW step with decoupled weight decay, as torch's fused AdamW computes it
// (FP32):
//   g = grad / grad_scale;  p −= lr · wd · p;  m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²
//   p −= step_size · m / (sqrt(v) / bias_sqrt + eps)
// and, where a copy is given, copy = bf16(p) rounded to nearest even (and its max |copy| where
// copy_amax is given). One launch covers every
// tensor: plan_adamw fills each tensor's first block and access width and returns the blocks;
// the caller puts the table in device memory; launch_adamw runs it.
int64_t plan_adamw(std::vector<AdamwTensor>& tensors);
void launch_adamw(const AdamwTensor* table, int count, int64_t blocks, const AdamwArgs& args,
                  cudaStream_t stream);

}  // namespace lpbench::cuda
