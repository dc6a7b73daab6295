#pragma once

#include <cstdint>

#include "kernels/cuda/saved_activation.cuh"
#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

// SwiGLU on the fused gate/up product: each row of gate_up [rows, 2·inner] holds the gate in its
// first half and the up projection in its second;
//   out = silu(gate) · up                                  (forward, [rows, inner])
//   d_gate = d_out · up · σ(gate) · (1 + gate · (1 − σ(gate)))
//   d_up   = d_out · silu(gate)                            (backward, into [rows, 2·inner])
// FP32 math, BF16 results; inner a multiple of 8, pointers 16-byte aligned.
// Under saved=int8 the forward also keeps gate_up as INT8 blocks (`keep`) and the backward reads
// them (`kept`) in place of gate_up; both need inner a multiple of 128.
struct SwigluArgs {
  const void* gate_up = nullptr;  // [rows, 2·inner] bf16 (the backward's: or `kept`)
  int64_t rows = 0;
  int64_t inner = 0;
  void* out = nullptr;          // forward: [rows, inner] bf16
  const void* d_out = nullptr;  // backward: [rows, inner] bf16
  void* d_gate_up = nullptr;    // backward: [rows, 2·inner] bf16
  uint32_t* amax = nullptr;     // optional: max |what the call writes| (amax.cuh)
  // Optional, instead of `amax` and without keep/kept: every row's max |x| of what the call
  // writes, then every column's ([rows + inner] forward, [rows + 2·inner] backward; zeroed by
  // the caller), for a quantization per row of it and per row of its transpose.
  uint32_t* line_amax = nullptr;
  Int8Blocks keep;      // forward, optional: gate_up's INT8 blocks written
  KeptInt8Blocks kept;  // backward, optional: gate_up read from these
};

void swiglu_forward(const SwigluArgs& args, cudaStream_t stream);
void swiglu_backward(const SwigluArgs& args, cudaStream_t stream);

}  // namespace lpbench::cuda
