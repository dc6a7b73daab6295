// The output layer's softmax cross-entropy in place on its BF16 logits (cross_entropy.cuh): the
// loss and the logits' gradient from one read of each row from global memory and one write, where
// the ATen ops of the reference path widen a chunk to FP32 and pass over it in seven ops
// (docs/perf-log.md §46, §47).
//
// Each block walks its own rows: four blocks of 128 threads an SM, two of 256, or one of 512,
// whichever is the most whose share of the SM's shared memory (55, 112 or 224 KiB on Hopper) holds
// a whole row, else one of 512 (§47: several blocks let one read while another writes, which pays
// only while no block reads its row twice). Pass 1 folds a row into its max and Σ exp(x − max)
// (each thread a running pair, rescaled when its max grows; then the block's pairs combined); pass
// 2 writes the gradient over the row. Pass 1 keeps what it read in the block's shared memory (all
// of a 32 000-word row, 89 % of a 128 256-word one), so that pass 2 reads from global memory only
// the row's end that did not fit, and reads it first, while it is likeliest to be in L2. Each
// thread keeps the vectors it read itself, so no barrier guards the copy. Each thread asks for
// eight 16-byte accesses before it uses the first (64 KiB an SM in flight).
//
// What bounds it (§47): with expf, holding the row gained 0 % at 32 000 words and 4–6 % at 128 256
// and 151 936, at 45–55 % of the HBM peak either way: the exponentials' instructions, not the
// bytes. Each e^(x − m) is now one multiply and the SFU's 2^x.
//
// The arithmetic: FP32 from the BF16 logits, the max, Σ e^(x − max), each probability as
// e^(x − max) · (1/Σ) (the reference takes exp of (x − max) − log Σ: the same value, rounded
// otherwise), the −1 at the target, divided by N (a multiply by 1/N where N is a power of two,
// which gives the same bits), rounded once to BF16. The sums run in another order than ATen's and
// 2^x is the SFU's, so the two differ by a few units in FP32's last place, which a BF16 rounding
// turns into one unit now and then (the GPU test's tolerance).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/resident_grid.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kInFlight = 8;

// Σ exp(x − max) over the values seen, with their max. Of nothing: max −∞, sum 0.
struct MaxSum {
  float max;
  float sum;
};

constexpr float kLog2e = 1.4426950408889634F;

// 2^x by the SFU's one instruction (MUFU.EX2, a few units in FP32's last place; results below
// FP32's normal range flushed to 0), where expf's range reduction takes ~8.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// e^(x − m): the difference exact for values near the max (two BF16 values), then one rounding
// by log2(e), so the largest terms, which carry the softmax, are as exact as expf's.
__device__ __forceinline__ float exp_from(float x, float m) {
  return exp2_approx((x - m) * kLog2e);
}

// Two pairs on the larger max. Symmetric bit for bit (the products are the same and FP32
// addition commutes), so a butterfly of shuffles leaves every lane the same pair.
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.max, b.max);
  if (m == -INFINITY) return {m, 0.0F};
  return {m, a.sum * exp_from(a.max, m) + b.sum * exp_from(b.max, m)};
}

__device__ __forceinline__ MaxSum warp_combine(MaxSum p) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const MaxSum other{__shfl_xor_sync(0xffffffffu, p.max, offset),
                       __shfl_xor_sync(0xffffffffu, p.sum, offset)};
    p = combine(p, other);
  }
  return p;
}

// kVec elements of a row as one access: 16 bytes (8 BF16) or one element.
template <int kVec>
struct Access;

template <>
struct Access<kBf16PerVector> {
  using Raw = uint4;
  static __device__ __forceinline__ Raw load(const __nv_bfloat16* p) { return load_global_16(p); }
  static __device__ __forceinline__ void widen(const Raw& r, float (&x)[kBf16PerVector]) {
    const Bf16x8 v = unpack_bf16x8(r);
#pragma unroll
    for (int i = 0; i < kBf16PerVector; ++i)
      x[i] = v.v[i];
  }
  static __device__ __forceinline__ void store(__nv_bfloat16* p, const float (&x)[kBf16PerVector]) {
    Bf16x8 v;
#pragma unroll
    for (int i = 0; i < kBf16PerVector; ++i)
      v.v[i] = x[i];
    store_bf16x8(p, v);
  }
};

template <>
struct Access<1> {
  using Raw = __nv_bfloat16;
  static __device__ __forceinline__ Raw load(const __nv_bfloat16* p) { return *p; }
  static __device__ __forceinline__ void widen(const Raw& r, float (&x)[1]) {
    x[0] = __bfloat162float(r);
  }
  static __device__ __forceinline__ void store(__nv_bfloat16* p, const float (&x)[1]) {
    *p = __float2bfloat16_rn(x[0]);
  }
};

// The vectors first, first + kThreads, … of a row (kInFlight of them, those before `vectors`),
// all asked for before any is used.
template <int kVec, int kThreads>
__device__ __forceinline__ void load_batch(const __nv_bfloat16* row, int64_t first, int64_t vectors,
                                           typename Access<kVec>::Raw (&raw)[kInFlight]) {
#pragma unroll
  for (int j = 0; j < kInFlight; ++j)
    if (first + j * kThreads < vectors)
      raw[j] = Access<kVec>::load(row + (first + j * kThreads) * kVec);
}

template <int kVec>
__device__ __forceinline__ void fold(MaxSum& p, const float (&x)[kVec]) {
  float m = p.max;
#pragma unroll
  for (int i = 0; i < kVec; ++i)
    m = fmaxf(m, x[i]);
  float s = m == p.max ? p.sum : p.sum * exp_from(p.max, m);
#pragma unroll
  for (int i = 0; i < kVec; ++i)
    s += exp_from(x[i], m);
  p = {m, s};
}

// The row's gradient at vector v from its logits, written over them: (e^(x − max) · (1 / Σ) −
// [j = target]) / N, rounded once to BF16. kByInverse: N a power of two, divided by a multiply by
// 1/N (the same bits); otherwise a correctly rounded division.
template <int kVec, bool kByInverse>
__device__ __forceinline__ void write_gradient(__nv_bfloat16* row, int64_t v,
                                               const typename Access<kVec>::Raw& raw, float max,
                                               float inverse_sum, int64_t target, float divisor,
                                               float inverse) {
  float x[kVec];
  Access<kVec>::widen(raw, x);
  const int64_t at_target = target - v * kVec;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    float g = exp_from(x[i], max) * inverse_sum;
    if (i == at_target) g -= 1.0F;
    x[i] = kByInverse ? g * inverse : __fdiv_rn(g, divisor);
  }
  Access<kVec>::store(row + v * kVec, x);
}

// `held`: the vectors 0 … held − 1 of each row that pass 1 keeps in shared memory, all of the row
// or a multiple of the block's threads (so that a thread's vectors beyond are held + its index,
// held + its index + kThreads, …). kThreads 512: one block an SM; 256: two, 128: four, each on its
// own rows, so that some read while others write.
template <int kVec, bool kByInverse, int kThreads>
__global__ void __launch_bounds__(kThreads, 512 / kThreads)
    cross_entropy_kernel(CrossEntropyArgs a, int64_t held, float inverse) {
  constexpr int kWarps = kThreads / 32;
  using A = Access<kVec>;
  using Raw = typename A::Raw;
  extern __shared__ __align__(16) unsigned char held_bytes[];
  Raw* const kept = reinterpret_cast<Raw*>(held_bytes);
  __shared__ MaxSum partial[2][kWarps];  // by row parity: a warp can be one row ahead, not two
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int64_t vectors = a.vocab / kVec;
  const auto divisor = static_cast<float>(a.divisor);
  int parity = 0;
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x, parity ^= 1) {
    auto* row = static_cast<__nv_bfloat16*>(a.logits) + r * a.vocab;
    const int64_t target = a.targets[r];
    const bool valid = target >= 0 && target < a.vocab;
    // Read before the barrier below, after which pass 2 may overwrite it.
    const float x_target = threadIdx.x == 0 && valid ? __bfloat162float(row[target]) : 0.0F;

    MaxSum p{-INFINITY, 0.0F};
    for (int64_t first = threadIdx.x; first < vectors; first += kInFlight * kThreads) {
      Raw raw[kInFlight];
      load_batch<kVec, kThreads>(row, first, vectors, raw);
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) {
        const int64_t v = first + j * kThreads;
        if (v >= vectors) break;
        // This thread's own vector, read back by this thread in pass 2: no barrier between.
        if (v < held) kept[v] = raw[j];
        float x[kVec];
        A::widen(raw[j], x);
        fold(p, x);
      }
    }
    p = warp_combine(p);
    if (lane == 0) partial[parity][warp] = p;
    __syncthreads();
    p = warp_combine(lane < kWarps ? partial[parity][lane] : MaxSum{-INFINITY, 0.0F});
    const float log_sum = logf(p.sum);
    const float inverse_sum = 1.0F / p.sum;
    if (threadIdx.x == 0) a.loss[r] = valid ? -((x_target - p.max) - log_sum) : NAN;

    // The row's end that shared memory did not hold, first: pass 1 read it last.
    for (int64_t first = held + threadIdx.x; first < vectors; first += kInFlight * kThreads) {
      Raw raw[kInFlight];
      load_batch<kVec, kThreads>(row, first, vectors, raw);
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) {
        const int64_t v = first + j * kThreads;
        if (v >= vectors) break;
        write_gradient<kVec, kByInverse>(row, v, raw[j], p.max, inverse_sum, target, divisor,
                                         inverse);
      }
    }
#pragma unroll 4
    for (int64_t v = threadIdx.x; v < held; v += kThreads)
      write_gradient<kVec, kByInverse>(row, v, kept[v], p.max, inverse_sum, target, divisor,
                                       inverse);
  }
}

// The most shared memory each of `blocks` blocks on an SM may take for the row it holds: at most
// 224 KiB, and 2 KiB a block under what the device allows, left for the partial pairs and the
// runtime's 1 KiB reserve: on Hopper 224 KiB for one block, 112 each for two, 55 each for four.
size_t most_held_bytes(int blocks) {
  const auto block = static_cast<size_t>(device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
  const auto sm =
      static_cast<size_t>(device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor));
  constexpr size_t kLeft = size_t{2} << 10;
  return std::min({size_t{224} << 10, block - kLeft, sm / blocks - kLeft});
}

template <int kVec, bool kByInverse, int kThreads>
void launch(const CrossEntropyArgs& a, cudaStream_t stream) {
  using Raw = typename Access<kVec>::Raw;
  const void* kernel =
      reinterpret_cast<const void*>(&cross_entropy_kernel<kVec, kByInverse, kThreads>);
  const int64_t vectors = a.vocab / kVec;
  const size_t most = most_held_bytes(512 / kThreads);
  const size_t room = a.held_bytes < 0 ? most : std::min(static_cast<size_t>(a.held_bytes), most);
  int64_t held = static_cast<int64_t>(room / sizeof(Raw));
  held = held >= vectors ? vectors : held / kThreads * kThreads;
  const size_t smem = static_cast<size_t>(held) * sizeof(Raw);
  allow_dynamic_shared_memory(kernel, smem);
  const int64_t blocks = resident_blocks(kernel, kThreads, smem, a.rows);
  cross_entropy_kernel<kVec, kByInverse, kThreads>
      <<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(
          a, held, 1.0F / static_cast<float>(a.divisor));
  LPBENCH_CUDA_CHECK_LAUNCH();
}

template <int kVec, bool kByInverse>
void launch(const CrossEntropyArgs& a, cudaStream_t stream) {
  int threads = a.block_threads;
  if (threads == 0) {
    // The most blocks an SM whose share of shared memory holds the whole row, else one block
    // that holds the most of it: §47 measured 256 threads at 0.161 ms against 512's 0.186 on
    // 32 000 words (a row in 112 KiB), and 512 at 0.675 ms against 256's 0.710 on 128 256 (a
    // second read of 56 % of each row costs more than the blocks' overlap gains).
    const auto row_bytes = static_cast<size_t>(a.vocab) * sizeof(__nv_bfloat16);
    threads = row_bytes <= most_held_bytes(4) ? 128 : row_bytes <= most_held_bytes(2) ? 256 : 512;
  }
  if (threads == 512) {
    launch<kVec, kByInverse, 512>(a, stream);
  } else if (threads == 128) {
    launch<kVec, kByInverse, 128>(a, stream);
  } else {
    launch<kVec, kByInverse, 256>(a, stream);
  }
}

template <int kVec>
void launch(const CrossEntropyArgs& a, cudaStream_t stream) {
  if ((a.divisor & (a.divisor - 1)) == 0) {
    launch<kVec, true>(a, stream);
  } else {
    launch<kVec, false>(a, stream);
  }
}

}  // namespace

void softmax_cross_entropy(const CrossEntropyArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(a.logits != nullptr && a.targets != nullptr && a.loss != nullptr,
                       "logits, targets and loss are needed");
  LPBENCH_CUDA_REQUIRE(a.rows >= 0 && a.vocab > 0, "rows must be ≥ 0 and the vocabulary > 0");
  LPBENCH_CUDA_REQUIRE(a.held_bytes >= -1, "held_bytes is -1 (the most the device allows) or ≥ 0");
  LPBENCH_CUDA_REQUIRE(a.block_threads == 0 || a.block_threads == 128 || a.block_threads == 256 ||
                           a.block_threads == 512,
                       "block_threads is 0 (the kernel's choice), 128, 256 or 512");
  LPBENCH_CUDA_REQUIRE(a.divisor > 0 && a.divisor <= (int64_t{1} << 24),
                       "the divisor must be in [1, 2^24], where FP32 holds it exactly");
  if (a.rows == 0) return;
  const NvtxRange range("lpbench softmax_cross_entropy");
  const bool vectors =
      a.vocab % kBf16PerVector == 0 && reinterpret_cast<uintptr_t>(a.logits) % 16 == 0;
  if (vectors) {
    launch<kBf16PerVector>(a, stream);
  } else {
    launch<1>(a, stream);
  }
}

}  // namespace lpbench::cuda
