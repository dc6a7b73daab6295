// The multi-tensor amax pass (tensors_amax.cuh): every block walks each tensor in turn, grid-
// strided over its 16-byte vectors with four loads in flight a thread, and folds its maximum into
// that tensor's amax with one atomic a block (amax.cuh's report_amax). The blocks flow from one
// tensor to the next without waiting for each other, so a small tensor costs no partial wave.
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/quantize_math.cuh"
#include "kernels/cuda/resident_grid.cuh"
#include "kernels/cuda/tensors_amax.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;

struct TensorsAmaxParams {
  AmaxTensor tensors[kMaxAmaxTensors];
  int count;
  uint32_t* amax;
};

// |x| of both BF16 halves of a word as FP32 bits: a BF16 value's FP32 bits are its own shifted
// left by 16, so the sign cleared and shifted, the integer max ranks them as the quantizer's
// abs_bits of the converted floats does (a NaN above +Inf).
__device__ __forceinline__ uint32_t word_max(uint32_t m, uint32_t w) {
  return max(m, max((w & 0x7fffu) << 16, w & 0x7fff0000u));
}

__device__ __forceinline__ uint32_t vector_max(uint32_t m, const uint4& v) {
  return word_max(word_max(word_max(word_max(m, v.x), v.y), v.z), v.w);
}

__global__ void __launch_bounds__(kThreads) tensors_amax_kernel(const TensorsAmaxParams p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  for (int t = 0; t < p.count; ++t) {
    const auto* x = static_cast<const uint4*>(p.tensors[t].x);
    const int64_t vectors = p.tensors[t].numel / 8;
    uint32_t m = 0;
    int64_t i = first;
    for (; i + 3 * stride < vectors; i += 4 * stride) {
      uint4 raw[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        raw[u] = quant::load_vec(x + i + u * stride);
#pragma unroll
      for (int u = 0; u < 4; ++u)
        m = vector_max(m, raw[u]);
    }
    for (; i < vectors; i += stride)
      m = vector_max(m, quant::load_vec(x + i));
    report_amax(p.amax + t, m);
    // report_amax's shared maxima are written again for the next tensor: warp 0 must have read
    // them first.
    __syncthreads();
  }
}

}  // namespace

bool tensors_amax_takes(const void* x, int64_t numel) {
  return x != nullptr && quant::aligned(x, 16) && numel > 0 && numel % 8 == 0;
}

void tensors_amax(const AmaxTensor* tensors, int count, uint32_t* amax, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(count >= 1 && count <= kMaxAmaxTensors,
                       "tensors_amax: 1 to kMaxAmaxTensors tensors");
  TensorsAmaxParams p{};
  int64_t vectors = 0;
  for (int t = 0; t < count; ++t) {
    LPBENCH_CUDA_REQUIRE(tensors_amax_takes(tensors[t].x, tensors[t].numel),
                         "tensors_amax: a tensor not 16-byte aligned or not whole vectors");
    p.tensors[t] = tensors[t];
    vectors = std::max(vectors, tensors[t].numel / 8);
  }
  p.count = count;
  p.amax = amax;
  // One resident wave; fewer blocks where even the largest tensor has fewer vectors than threads.
  const int64_t needed = (vectors + kThreads - 1) / kThreads;
  const int64_t blocks = resident_blocks(reinterpret_cast<const void*>(tensors_amax_kernel),
                                         kThreads, 0, std::max<int64_t>(1, needed));
  tensors_amax_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace lpbench::cuda
