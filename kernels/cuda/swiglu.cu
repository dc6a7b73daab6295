// SwiGLU forward and backward, each one pass: 8 elements of the gate and of the up half per
// thread (16-byte accesses), grid-strided; a vector's row and column come from a multiply-high
// division (fast_divmod.cuh), not a 64-bit one.
//
// Under saved=int8 the forward writes gate_up's INT8 blocks from the registers it already holds
// and the backward reads them instead of gate_up (saved_int8_blocks.cuh): 16 threads a block of
// 128, which the layout gives when inner is a multiple of 128.
//
// Both round as kernels/reference/swiglu.h defines: silu(gate) to BF16 as torch's silu of a BF16
// tensor does, the rest in FP32 and rounded once.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fast_divmod.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/saved_int8_blocks.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;

// torch's silu: x / (1 + exp(−x)) in FP32.
__device__ __forceinline__ float silu(float x) {
  return x / (1.0F + expf(-x));
}

// `per_row`: the vectors of a row of out (inner / 8); `total` < 2^31, the launcher checks.
template <bool kBackward>
__global__ void __launch_bounds__(kThreads)
    swiglu_kernel(const SwigluArgs a, const FastDivmod per_row, const uint32_t total) {
  const auto* gu = static_cast<const __nv_bfloat16*>(a.gate_up);
  uint32_t amax = 0;
  for (uint32_t item = blockIdx.x * blockDim.x + threadIdx.x; item < total;
       item += gridDim.x * blockDim.x) {
    uint32_t row_of_item = 0;
    const int64_t col = int64_t{per_row.divmod(item, row_of_item)} * kBf16PerVector;
    const int64_t row = row_of_item;
    const int64_t gate_at = row * 2 * a.inner + col;
    Bf16x8 gate;
    Bf16x8 up;
    if (kBackward && a.kept.values != nullptr) {
      gate = restore_int8x8(a.kept, row, col, 2 * a.inner);
      up = restore_int8x8(a.kept, row, col + a.inner, 2 * a.inner);
    } else {
      gate = load_bf16x8(gu + gate_at);
      up = load_bf16x8(gu + gate_at + a.inner);
    }
    if constexpr (!kBackward) {
      if (a.keep.values != nullptr) {
        keep_int8x8(gate, row, col, 2 * a.inner, a.keep);
        keep_int8x8(up, row, col + a.inner, 2 * a.inner, a.keep);
      }
      Bf16x8 out;
#pragma unroll
      for (int e = 0; e < kBf16PerVector; ++e)
        out.v[e] = round_bf16(silu(gate.v[e])) * up.v[e];
      store_bf16x8(static_cast<__nv_bfloat16*>(a.out) + row * a.inner + col, out, amax);
    } else {
      const Bf16x8 d =
          load_bf16x8(static_cast<const __nv_bfloat16*>(a.d_out) + row * a.inner + col);
      Bf16x8 d_gate;
      Bf16x8 d_up;
#pragma unroll
      for (int e = 0; e < kBf16PerVector; ++e) {
        const float g = gate.v[e];
        const float sigmoid = 1.0F / (1.0F + expf(-g));
        d_up.v[e] = d.v[e] * round_bf16(silu(g));
        d_gate.v[e] = d.v[e] * up.v[e] * sigmoid * (1.0F + g * (1.0F - sigmoid));
      }
      auto* dgu = static_cast<__nv_bfloat16*>(a.d_gate_up);
      store_bf16x8(dgu + gate_at, d_gate, amax);
      store_bf16x8(dgu + gate_at + a.inner, d_up, amax);
    }
  }
  report_amax(a.amax, amax_of_pairs(amax));
}

template <bool kBackward>
void launch(const SwigluArgs& a, cudaStream_t stream) {
  const bool int8_in = kBackward && a.kept.values != nullptr;
  LPBENCH_CUDA_REQUIRE((a.gate_up != nullptr || int8_in) && a.rows > 0 && a.inner > 0,
                       "an empty gate_up");
  LPBENCH_CUDA_REQUIRE(a.inner % kBf16PerVector == 0,
                       "the inner width must be a multiple of 8, got " + std::to_string(a.inner));
  const void* pointers[] = {a.gate_up, a.out, a.d_out, a.d_gate_up};
  for (const void* p : pointers)
    LPBENCH_CUDA_REQUIRE(reinterpret_cast<uintptr_t>(p) % 16 == 0, "pointers 16-byte aligned");
  // Rows of gate_up are 2·inner wide, but a block must not straddle the gate and up halves.
  if (kBackward) {
    check_int8_blocks(a.kept.values, a.kept.scales, a.inner, "swiglu_backward's gate_up halves");
  } else {
    check_int8_blocks(a.keep.values, a.keep.scales, a.inner, "swiglu_forward's gate_up halves");
  }
  const int64_t per_row = a.inner / kBf16PerVector;
  const int64_t items = a.rows * per_row;
  LPBENCH_CUDA_REQUIRE(items < kFastDivmodLimit, "swiglu: at most 2^31 vectors of 8 a call, got " +
                                                     std::to_string(items) + " (split the rows)");
  const int64_t blocks = std::min<int64_t>((items + kThreads - 1) / kThreads,
                                           a.amax != nullptr ? kAmaxGridCap : 65535LL * 16);
  swiglu_kernel<kBackward><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      a, FastDivmod(static_cast<uint32_t>(per_row)), static_cast<uint32_t>(items));
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace

void swiglu_forward(const SwigluArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(a.out != nullptr, "swiglu_forward writes out");
  const NvtxRange range("lpbench swiglu_forward");
  launch<false>(a, stream);
}

void swiglu_backward(const SwigluArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(a.d_out != nullptr && a.d_gate_up != nullptr,
                       "swiglu_backward reads d_out and writes d_gate_up");
  const NvtxRange range("lpbench swiglu_backward");
  launch<true>(a, stream);
}

}  // namespace lpbench::cuda
