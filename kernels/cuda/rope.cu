// Rotary position embedding, in place or from one strided layout into another (the backward
// reads attention's dQ/dK and writes them rotated into the gradient of the fused QKV output).
// One thread rotates 8 pairs: 16 bytes of each half, 32 bytes of cos and sin.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/rope.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) rope_kernel(const RopeArgs a) {
  const int64_t half = a.head_dim / 2;
  const int64_t groups = half / kBf16PerVector;  // 8-pair groups per head
  const int64_t total = a.batch * a.seq * a.heads * groups;
  const auto* in = static_cast<const __nv_bfloat16*>(a.in);
  auto* out = static_cast<__nv_bfloat16*>(a.out);
  uint32_t amax = 0;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < total;
       item += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t g = item % groups;
    const int64_t h = (item / groups) % a.heads;
    const int64_t t = (item / (groups * a.heads)) % a.seq;
    const int64_t b = item / (groups * a.heads * a.seq);
    const int64_t i = g * kBf16PerVector;
    const int64_t src = b * a.in_batch_stride + t * a.in_token_stride + h * a.in_head_stride + i;
    const int64_t dst = b * a.out_batch_stride + t * a.out_token_stride + h * a.out_head_stride + i;
    const Bf16x8 x1 = load_bf16x8(in + src);
    const Bf16x8 x2 = load_bf16x8(in + src + half);
    if (!a.rotate) {
      store_bf16x8(out + dst, x1, amax);
      store_bf16x8(out + dst + half, x2, amax);
      continue;
    }
    const float4* cp = reinterpret_cast<const float4*>(a.cos + t * half + i);
    const float4* sp = reinterpret_cast<const float4*>(a.sin + t * half + i);
    const float4 c0 = cp[0], c1 = cp[1], s0 = sp[0], s1 = sp[1];
    const float c[kBf16PerVector] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
    const float s[kBf16PerVector] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
    Bf16x8 y1;
    Bf16x8 y2;
#pragma unroll
    for (int e = 0; e < kBf16PerVector; ++e) {
      // Rounded products and sums, never fused into an FMA: the reference multiplies and adds
      // in separate operations, and the results are to match bit for bit.
      const float a1c = __fmul_rn(x1.v[e], c[e]);
      const float a2s = __fmul_rn(x2.v[e], s[e]);
      const float a2c = __fmul_rn(x2.v[e], c[e]);
      const float a1s = __fmul_rn(x1.v[e], s[e]);
      y1.v[e] = a.inverse ? __fadd_rn(a1c, a2s) : __fsub_rn(a1c, a2s);
      y2.v[e] = a.inverse ? __fsub_rn(a2c, a1s) : __fadd_rn(a2c, a1s);
    }
    store_bf16x8(out + dst, y1, amax);
    store_bf16x8(out + dst + half, y2, amax);
  }
  report_amax(a.amax, amax_of_pairs(amax));
}

}  // namespace

void rope(const RopeArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(a.in && a.out && (!a.rotate || (a.cos && a.sin)),
                       "in, out, and to rotate cos and sin, are needed");
  LPBENCH_CUDA_REQUIRE(a.batch > 0 && a.seq > 0 && a.heads > 0, "empty input");
  LPBENCH_CUDA_REQUIRE(a.head_dim % (2 * kBf16PerVector) == 0,
                       "head_dim must be a multiple of 16, got " + std::to_string(a.head_dim));
  const int64_t strides[] = {a.in_batch_stride,  a.in_token_stride,  a.in_head_stride,
                             a.out_batch_stride, a.out_token_stride, a.out_head_stride};
  for (int64_t stride : strides)
    LPBENCH_CUDA_REQUIRE(stride % kBf16PerVector == 0, "strides must be multiples of 8");
  const void* pointers[] = {a.in, a.out, a.cos, a.sin};
  for (const void* p : pointers)
    LPBENCH_CUDA_REQUIRE(reinterpret_cast<uintptr_t>(p) % 16 == 0, "pointers 16-byte aligned");
  const NvtxRange range(!a.rotate   ? "lpbench rope_copy"
                        : a.inverse ? "lpbench rope_backward"
                                    : "lpbench rope_forward");
  const int64_t items = a.batch * a.seq * a.heads * (a.head_dim / 2 / kBf16PerVector);
  const int64_t blocks = std::min<int64_t>((items + kThreads - 1) / kThreads,
                                           a.amax != nullptr ? kAmaxGridCap : 65535LL * 16);
  rope_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace lpbench::cuda
