// Rotary position embedding, in place or from one strided layout into another (the backward
// reads attention's dQ/dK and writes them rotated into the gradient of the fused QKV output).
// One thread rotates 8 pairs: 16 bytes of each half, 32 bytes of cos and sin. The flat index
// of a group of 8 pairs is split into (batch, token, head, group) by multiply-high divisions
// (fast_divmod.cuh): 64-bit ones cost more than the group's bytes (docs/perf-log.md §36).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fast_divmod.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/rope.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;

// The index space of one call: groups of 8 pairs a head, heads a token, tokens a sequence.
struct RopeIndex {
  uint32_t total = 0;
  FastDivmod groups, heads, seq;
};

// One item: 8 pairs of one head of part `a`, item its index within the part.
__device__ __forceinline__ void rope_item(const RopeArgs& a, const RopeIndex& ix, uint32_t item,
                                          uint32_t& amax) {
  const int64_t half = a.head_dim / 2;
  const auto* in = static_cast<const __nv_bfloat16*>(a.in);
  auto* out = static_cast<__nv_bfloat16*>(a.out);
  uint32_t head_item = 0, token_item = 0, b = 0;
  const uint32_t g = ix.groups.divmod(item, head_item);
  const uint32_t h = ix.heads.divmod(head_item, token_item);
  const uint32_t t = ix.seq.divmod(token_item, b);
  const int64_t i = int64_t{g} * kBf16PerVector;
  const int64_t src = b * a.in_batch_stride + t * a.in_token_stride + h * a.in_head_stride + i;
  const int64_t dst = b * a.out_batch_stride + t * a.out_token_stride + h * a.out_head_stride + i;
  const Bf16x8 x1 = load_bf16x8(in + src);
  const Bf16x8 x2 = load_bf16x8(in + src + half);
  if (!a.rotate) {
    store_bf16x8(out + dst, x1, amax);
    store_bf16x8(out + dst + half, x2, amax);
    return;
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

// The parts of one launch, one after another in the flat index space: part p's items end at
// end[p] (end[p] = end[count - 1] past the last part, so its branches are never taken).
struct RopeLaunch {
  RopeArgs part[kRopeMaxParts];
  RopeIndex ix[kRopeMaxParts];
  uint32_t end[kRopeMaxParts] = {0, 0, 0};
};

// A call alone (the forward): its arguments by value, the kernel (and PTX) it was before
// rope_parts. Through the parts' kernel the forward ran 8 % slower, and through a template of it
// with the branches compiled out 4–5 % slower (docs/perf-log.md §37).
__global__ void __launch_bounds__(kThreads) rope_kernel(const RopeArgs a, const RopeIndex ix) {
  uint32_t amax = 0;
  // total < 2^31 (the launcher checks), so item + the grid's stride stays below 2^32.
  for (uint32_t item = blockIdx.x * blockDim.x + threadIdx.x; item < ix.total;
       item += gridDim.x * blockDim.x) {
    rope_item(a, ix, item, amax);
  }
  report_amax(a.amax, amax_of_pairs(amax));
}

// rope_parts: each branch names its part by a constant index, so that the arguments stay in the
// parameter bank (an index computed at run time would copy them into local memory).
__global__ void __launch_bounds__(kThreads)
    rope_parts_kernel(const __grid_constant__ RopeLaunch l) {
  uint32_t amax = 0;
  // Fewer than 2^31 items in all (the launcher checks), so item + the grid's stride stays below
  // 2^32.
  for (uint32_t item = blockIdx.x * blockDim.x + threadIdx.x; item < l.end[kRopeMaxParts - 1];
       item += gridDim.x * blockDim.x) {
    if (item < l.end[0]) {
      rope_item(l.part[0], l.ix[0], item, amax);
    } else if (item < l.end[1]) {
      rope_item(l.part[1], l.ix[1], item - l.end[0], amax);
    } else {
      rope_item(l.part[2], l.ix[2], item - l.end[1], amax);
    }
  }
  report_amax(l.part[0].amax, amax_of_pairs(amax));
}

void check(const RopeArgs& a) {
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
}

}  // namespace

void rope_parts(const RopeArgs* parts, int count, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(count >= 1 && count <= kRopeMaxParts,
                       "rope: 1 to 3 parts a launch, got " + std::to_string(count));
  RopeLaunch l;
  int64_t items = 0;
  bool inverse = false, copy_only = true;
  for (int p = 0; p < count; ++p) {
    const RopeArgs& a = parts[p];
    check(a);
    LPBENCH_CUDA_REQUIRE(a.amax == parts[0].amax, "rope: the parts of a launch share one amax");
    const int64_t groups = a.head_dim / 2 / kBf16PerVector;
    const int64_t part_items = a.batch * a.seq * a.heads * groups;
    items += part_items;
    LPBENCH_CUDA_REQUIRE(items < kFastDivmodLimit,
                         "rope: at most 2^31 groups of 8 pairs a launch, got " +
                             std::to_string(items) + " (split the batch)");
    l.part[p] = a;
    l.ix[p].groups = FastDivmod(static_cast<uint32_t>(groups));
    l.ix[p].heads = FastDivmod(static_cast<uint32_t>(a.heads));
    l.ix[p].seq = FastDivmod(static_cast<uint32_t>(a.seq));
    l.ix[p].total = static_cast<uint32_t>(part_items);
    l.end[p] = static_cast<uint32_t>(items);
    inverse = inverse || (a.rotate && a.inverse);
    copy_only = copy_only && !a.rotate;
  }
  for (int p = count; p < kRopeMaxParts; ++p)
    l.end[p] = static_cast<uint32_t>(items);
  const NvtxRange range(copy_only ? "lpbench rope_copy"
                        : inverse ? "lpbench rope_backward"
                                  : "lpbench rope_forward");
  const int64_t blocks = std::min<int64_t>((items + kThreads - 1) / kThreads,
                                           parts[0].amax != nullptr ? kAmaxGridCap : 65535LL * 16);
  if (count == 1) {
    rope_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(l.part[0], l.ix[0]);
  } else {
    rope_parts_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(l);
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
}

void rope(const RopeArgs& a, cudaStream_t stream) {
  rope_parts(&a, 1, stream);
}

}  // namespace lpbench::cuda
