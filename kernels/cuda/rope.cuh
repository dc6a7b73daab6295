#pragma once

#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

// Rotary position embedding on BF16 heads, the rotate-half form: for each head vector of
// head_dim elements, the first and second halves (x1, x2) become
//   x1·cos − x2·sin,  x2·cos + x1·sin          (forward)
//   x1·cos + x2·sin,  x2·cos − x1·sin          (inverse: the backward, rotating the gradient)
// with cos and sin of the token's position (FP32 math, each product and sum rounded as the
// reference's separate operations round them, then BF16 once).
//
// Element (b, t, h, i) of the input sits at in + b·batch_stride + t·token_stride +
// h·head_stride + i, likewise for the output (which may be the input: in place); the position of
// token t is t. head_dim/2 must be a multiple of 8, the strides multiples of 8 and the pointers
// 16-byte aligned.
struct RopeArgs {
  const void* in = nullptr;  // bf16
  void* out = nullptr;       // bf16
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t heads = 0;
  int64_t head_dim = 0;
  int64_t in_batch_stride = 0, in_token_stride = 0, in_head_stride = 0;
  int64_t out_batch_stride = 0, out_token_stride = 0, out_head_stride = 0;
  const float* cos = nullptr;  // [>= seq, head_dim / 2]
  const float* sin = nullptr;
  bool inverse = false;
  // false: copy the heads unrotated (the backward's dV, beside dQ and dK in one gradient).
  bool rotate = true;
  uint32_t* amax = nullptr;  // optional: max |out| (amax.cuh)
  // rope_parts only, optional, instead of amax: every row's, then every column's, max |out| of
  // the matrix the parts write into ([rows + width] FP32 bits, as the row pair's quantization
  // takes them: quantize.cuh's line_amax). That matrix has batch·seq rows of out_token_stride
  // columns (out_batch_stride = seq·out_token_stride where batch > 1), and this part's first head
  // starts at its column `line_col`. The parts share it, batch, seq and head_dim.
  uint32_t* line_amax = nullptr;
  int64_t line_col = 0;
};

void rope(const RopeArgs& args, cudaStream_t stream);

// Up to kRopeMaxParts calls of `rope` in one launch, each part the same bits as its own call:
// the backward's dQ and dK rotated back and dV copied into one gradient, where three launches
// paid three ramps and drains (docs/perf-log.md §37). Every part's amax is the same (or none).
constexpr int kRopeMaxParts = 3;
void rope_parts(const RopeArgs* parts, int count, cudaStream_t stream);

}  // namespace lpbench::cuda
