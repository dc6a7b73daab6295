// The AdamW step over every parameter in one launch: each block updates a chunk of one tensor,
// found by a binary search over the tensors' first blocks; 16-byte accesses where the tensor
// allows (FP32 ×4, its BF16 copy ×4 as 8 bytes). Memory-bound: 28 bytes a parameter moved (read
// p, g, m, v; write p, m, v), 30 with the BF16 copy; 24 (26) on the rows of a gradient by rows
// that have none.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/adamw.cuh"
#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/nvtx_range.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kVectorsPerThread = 4;                                   // float4 each
constexpr int64_t kChunk = int64_t{kThreads} * kVectorsPerThread * 4;  // elements a block

struct Element {
  float p, m, v;
};

__device__ __forceinline__ Element update(float p, float g, float m, float v, float scale,
                                          const AdamwArgs& a, float step_size, float bias_sqrt) {
  g = g / scale;
  p -= a.lr * a.weight_decay * p;
  m = a.beta1 * m + (1.0F - a.beta1) * g;
  v = a.beta2 * v + (1.0F - a.beta2) * g * g;
  const float denom = sqrtf(v) / bias_sqrt + a.eps;
  p -= step_size * m / denom;
  return {p, m, v};
}

// Where the gradient of element i is, for a tensor whose gradient is given by rows: its offset
// into `grad`, or −1 for a row without one (its gradient is zero).
__device__ __forceinline__ int64_t row_gradient_at(const AdamwTensor& t, int64_t i) {
  const int64_t row = i / t.row_width;
  const int32_t slot = t.grad_rows[row];
  return slot < 0 ? -1 : static_cast<int64_t>(slot) * t.row_width + (i - row * t.row_width);
}

// |x| of a BF16 value (its bits in the low half) as the bits of the FP32 it widens to.
__device__ __forceinline__ uint32_t bf16_abs_bits(uint32_t bits) {
  return (bits & 0x7fffu) << 16;
}

__global__ void __launch_bounds__(kThreads)
    adamw_kernel(const AdamwTensor* table, int count, const AdamwArgs a) {
  // The tensor this block works on: the last whose first block is at or before it.
  const auto block = static_cast<int64_t>(blockIdx.x);
  int lo = 0;
  int hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (table[mid].first_block <= block) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const AdamwTensor t = table[lo];
  const float scale = a.grad_scale != nullptr ? *a.grad_scale : 1.0F;
  const int64_t begin = (block - t.first_block) * kChunk;
  const int64_t end = std::min(begin + kChunk, t.numel);
  auto* copy = static_cast<__nv_bfloat16*>(t.bf16_copy);
  uint32_t amax = 0;  // of the copy's values written by this thread, as FP32 bits
  if (t.vectorized != 0) {
    for (int64_t i = begin + 4 * static_cast<int64_t>(threadIdx.x); i < end; i += 4 * kThreads) {
      float4 p = *reinterpret_cast<const float4*>(t.param + i);
      // By rows, the four share a row (row_width is a multiple of 4 where vectorized).
      const int64_t at = t.grad_rows != nullptr ? row_gradient_at(t, i) : i;
      const float4 g = at >= 0 ? *reinterpret_cast<const float4*>(t.grad + at)
                               : make_float4(0.0F, 0.0F, 0.0F, 0.0F);
      float4 m = *reinterpret_cast<const float4*>(t.exp_avg + i);
      float4 v = *reinterpret_cast<const float4*>(t.exp_avg_sq + i);
      float* ps[4] = {&p.x, &p.y, &p.z, &p.w};
      float* ms[4] = {&m.x, &m.y, &m.z, &m.w};
      float* vs[4] = {&v.x, &v.y, &v.z, &v.w};
      const float gs[4] = {g.x, g.y, g.z, g.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const Element r = update(*ps[e], gs[e], *ms[e], *vs[e], scale, a, t.step_size, t.bias_sqrt);
        *ps[e] = r.p;
        *ms[e] = r.m;
        *vs[e] = r.v;
      }
      *reinterpret_cast<float4*>(t.param + i) = p;
      *reinterpret_cast<float4*>(t.exp_avg + i) = m;
      *reinterpret_cast<float4*>(t.exp_avg_sq + i) = v;
      if (copy != nullptr) {
        const __nv_bfloat162 lo2 = __floats2bfloat162_rn(p.x, p.y);
        const __nv_bfloat162 hi2 = __floats2bfloat162_rn(p.z, p.w);
        const uint2 bits = make_uint2(*reinterpret_cast<const uint32_t*>(&lo2),
                                      *reinterpret_cast<const uint32_t*>(&hi2));
        *reinterpret_cast<uint2*>(copy + i) = bits;
        amax = max(amax, max(max(bf16_abs_bits(bits.x), bf16_abs_bits(bits.x >> 16)),
                             max(bf16_abs_bits(bits.y), bf16_abs_bits(bits.y >> 16))));
      }
    }
  } else {
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
      const int64_t at = t.grad_rows != nullptr ? row_gradient_at(t, i) : i;
      const float g = at >= 0 ? t.grad[at] : 0.0F;
      const Element r =
          update(t.param[i], g, t.exp_avg[i], t.exp_avg_sq[i], scale, a, t.step_size, t.bias_sqrt);
      t.param[i] = r.p;
      t.exp_avg[i] = r.m;
      t.exp_avg_sq[i] = r.v;
      if (copy != nullptr) {
        const __nv_bfloat16 c = __float2bfloat16_rn(r.p);
        copy[i] = c;
        amax = max(amax, bf16_abs_bits(__bfloat16_as_ushort(c)));
      }
    }
  }
  // The block's tensor is the same for all its threads, so all of them take part.
  report_amax(t.copy_amax, amax);
}

bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace

int64_t plan_adamw(std::vector<AdamwTensor>& tensors) {
  LPBENCH_CUDA_REQUIRE(tensors.size() < (1U << 30), "too many tensors for one launch");
  int64_t blocks = 0;
  for (AdamwTensor& t : tensors) {
    LPBENCH_CUDA_REQUIRE(t.param && t.grad && t.exp_avg && t.exp_avg_sq && t.numel > 0,
                         "adamw: every tensor needs its master, gradient and moments");
    LPBENCH_CUDA_REQUIRE(t.copy_amax == nullptr || t.bf16_copy != nullptr,
                         "adamw: an amax of the copy needs the copy");
    LPBENCH_CUDA_REQUIRE(t.grad_rows == nullptr || (t.row_width > 0 && t.numel % t.row_width == 0),
                         "adamw: a gradient by rows needs a row width that divides the tensor");
    t.first_block = blocks;
    blocks += (t.numel + kChunk - 1) / kChunk;
    t.vectorized = t.numel % 4 == 0 && aligned(t.param, 16) && aligned(t.grad, 16) &&
                   aligned(t.exp_avg, 16) && aligned(t.exp_avg_sq, 16) &&
                   (t.bf16_copy == nullptr || aligned(t.bf16_copy, 8)) &&
                   (t.grad_rows == nullptr || t.row_width % 4 == 0);
  }
  LPBENCH_CUDA_REQUIRE(blocks < (int64_t{1} << 31), "adamw: more blocks than a grid holds");
  return blocks;
}

void launch_adamw(const AdamwTensor* table, int count, int64_t blocks, const AdamwArgs& args,
                  cudaStream_t stream) {
  if (count == 0) return;
  const NvtxRange range("lpbench adamw");
  adamw_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(table, count, args);
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace lpbench::cuda
