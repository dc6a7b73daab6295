#pragma once

// The one-pass tensorwise quantization of a BF16 matrix whose sides are multiples of 128: the
// training step's common case (int8-tensor and fp8-tensor quantize every X, W and dY this way),
// given its own kernel because the general tile kernel is issue-bound on it (docs/perf-log.md
// §8, §19). quantize() calls it where it applies, and a QuantizationBatch several calls at once
// (kernels/torch/quantization_batch.h); nothing else should.
#include <vector>

#include "kernels/cuda/quantize.cuh"
#include "kernels/cuda/rope.cuh"

namespace lpbench::cuda {

// Whether this call can take the one-pass kernel: tensorwise, BF16 in, no stochastic rounding,
// sides multiples of 128, 16-byte aligned input rows, outputs aligned for 8-byte (X's layout) and
// 4-byte (Xᵀ's) stores. Delayed scaling included: the kernel saturates under a given amax or an
// amax history's, which it reads itself, and records max |x| (QuantizeArgs::history).
bool tensorwise_kernel_applies(const QuantizeArgs& args);

// Launches it, after an amax pass into args.workspace where args.amax is not given.
void quantize_tensorwise(const QuantizeArgs& args, cudaStream_t stream);

// Several calls, each as quantize_tensorwise would make it by its given amax, in one launch for up
// to eight of one format and the same layouts: a layer's weights, whose amaxes AdamW or one
// amax pass found before (kernels/torch/weight_amax.h). One ramp, tail and launch where there
// were four: llama2-7b's four weights at 81 % of the HBM peak where four launches ran at 77 %
// (docs/perf-log.md §72). The calls must not read what another writes. Whether a call may go in:
// tensorwise_kernel_applies, a given amax, no history or record.
bool tensorwise_batch_takes(const QuantizeArgs& args);
void quantize_tensorwise_batch(const std::vector<QuantizeArgs>& calls, cudaStream_t stream);

// SwiGLU's output X = silu(gate) · up quantized as the kernel computes it from the gate/up
// product, both layouts as asked, under delayed scaling only (the scale must be known before the
// values are): args.x holds rows of [gate | up] (args.ld ≥ 2 · args.cols elements apart), and
// rows × cols is X's shape. X's values are SwiGLU's forward's BF16 bits (swiglu_math.cuh), so
// the result is quantize(swiglu_forward(gate_up)) bit for bit, and X itself is never written.
// Whether it applies: as tensorwise_kernel_applies, and args.ld ≥ 2 · args.cols; the launch also
// needs args.history with args.delayed.
bool swiglu_tensorwise_applies(const QuantizeArgs& args);
void quantize_swiglu_tensorwise(const QuantizeArgs& args, cudaStream_t stream);

// SwiGLU's gradient d gate_up [rows, 2·inner] (d_gate then d_up, swiglu.cuh) quantized, both
// layouts, as a kernel computes it from gate_up (args.x, args.ld = 2·inner; args.cols = 2·inner
// is the gradient's width) and `d_out` [rows, inner], the gradient of SwiGLU's output, under
// delayed scaling only: the bits of quantize(swiglu_backward's d_gate_up), which is never written.
// Whether it applies: as tensorwise_kernel_applies, and inner a multiple of 128; the launch also
// needs args.history with args.delayed. (By the gradient's own amax, an amax pass of SwiGLU's
// backward and this kernel took longer than writing the gradient and quantizing it:
// docs/perf-log.md §65.)
bool swiglu_backward_tensorwise_applies(const QuantizeArgs& args);
void quantize_swiglu_backward_tensorwise(const QuantizeArgs& args, const void* d_out,
                                         cudaStream_t stream);

// A norm's output X = h · rstd · weight (rmsnorm.cuh's y) quantized as the kernel computes it from
// h [rows, cols] (args.x, args.ld), each row's inverse RMS `rstd` [rows] and the norm's FP32
// `weight` [cols], in the same way: the bits of quantize(rmsnorm_forward's y), y never written.
// Whether it applies: as tensorwise_kernel_applies, and a 16-byte aligned weight; the launch also
// needs args.history with args.delayed, or (current scaling) args.amax: y's amax, which the norm
// finds without writing y (RmsNormArgs::y_amax).
bool rmsnorm_tensorwise_applies(const QuantizeArgs& args, const float* weight);
void quantize_rmsnorm_tensorwise(const QuantizeArgs& args, const float* rstd, const float* weight,
                                 cudaStream_t stream);

// RoPE's backward into the gradient of the fused QKV product X [batch · seq, cols] (attention's
// dQ and dK rotated back, dV copied: `parts`, as rope_parts takes them, their `out` unused)
// quantized as the kernel computes it, both layouts, under delayed scaling only: the bits of
// quantize(rope_parts' X), X never written. Whether it applies: as tensorwise_kernel_applies,
// heads of 16 to 128 elements dividing 128 and each part's heads a multiple of 128 columns (a
// tile's columns are whole heads of one part), sequences of a multiple of 128 tokens, 16-byte
// aligned parts and tables, strides multiples of 8; the launch also needs args.history with
// args.delayed. (By the gradient's own amax, found by a pass of RoPE's backward that wrote
// nothing, the pair ran as long as RoPE's backward and the one-pass quantization:
// docs/perf-log.md §66.)
bool rope_backward_tensorwise_applies(const QuantizeArgs& args, const RopeArgs (&parts)[3]);
void quantize_rope_backward_tensorwise(const QuantizeArgs& args, const RopeArgs (&parts)[3],
                                       cudaStream_t stream);

// The same kernel for square blocks of kb × kb (kb a multiple of 128: each tile in one block),
// applying the inverse scales the general path's amax pass left in `inv_blocks` (laid out as the
// output's scale grid). Whether it applies: as tensorwise_kernel_applies, blocks {kb, kb}, and
// not QuantizeArgs::tile_kernel.
bool block_tile_kernel_applies(const QuantizeArgs& args, int64_t kb);
void quantize_tiles_by_block(const QuantizeArgs& args, const float* inv_blocks,
                             cudaStream_t stream);

}  // namespace lpbench::cuda
