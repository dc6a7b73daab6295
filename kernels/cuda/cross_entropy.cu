// The output layer's softmax cross-entropy in place on its BF16 logits (cross_entropy.cuh): the
// loss and the logits' gradient from one read of each row from global memory and one write, where
// the ATen ops of the reference path widen a chunk to FP32 and pass over it in seven ops
// (docs/perf-log.md §46–§49).
//
// The rows are walked by blocks, or by clusters of two blocks, each cluster on its own rows, one
// block a row: four blocks of 128 threads an SM, two of 256, or one of 512, whichever is the most
// whose share of the SM's shared memory (55, 112 or 224 KiB on Hopper) holds a whole row; a row
// that no share of two holds takes one block of 512 (holding most of it), or, without bulk copies,
// is split between the two blocks of 256 of a cluster (choose_shape below). Pass 1 folds a row (a
// block's half, in a cluster) into its max and Σ exp(x − max) (each thread a running pair,
// rescaled when its max grows; then the block's pairs combined, then the cluster's two over
// distributed shared memory); pass 2 writes the gradient over it. The block holds its row in
// shared memory between the passes (all of a 32 000-word row, 89 % of a 128 256-word one, 75 % of
// a 151 936-word one), so that pass 2 reads from global memory only the end that did not fit, and
// reads it first, while it is likeliest to be in L2.
//
// How the held part gets there (§49). On Hopper the copy engine brings it in, by bulk copies in
// two chunks, each signalled on its own mbarrier: pass 1 folds the unheld end from the threads'
// own loads while the chunks land, then each chunk as it lands; in pass 2 the last warp done with
// a chunk asks for the same chunk of the block's next row, so the next row streams in while this
// one is written, and no register is held for it. Where a row does not fit (128 256 and 151 936
// words), each thread of the block of 512 keeps up to ten vectors of the unheld end in its
// registers between the passes (the register tail), so that Qwen3's rows too are read once, and the
// next row's unheld end is asked into L2 with its first chunk (§50). Elsewhere (or asked for), each
// thread loads the vectors it folds and keeps them itself, so that no barrier guards the copy,
// asking for eight 16-byte accesses before it uses the first (64 KiB an SM in flight): bound by the
// latency of its own loads at 25 % occupancy (§48's profile), 6–13 % slower.
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
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/mbarrier.cuh"
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

// The vectors first, first + kThreads, … of a row (kBatch of them, those before `end`), all
// asked for before any is used.
template <int kVec, int kThreads, int kBatch>
__device__ __forceinline__ void load_batch(const __nv_bfloat16* row, int64_t first, int64_t end,
                                           typename Access<kVec>::Raw (&raw)[kBatch]) {
#pragma unroll
  for (int j = 0; j < kBatch; ++j)
    if (first + j * kThreads < end)
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

// The block's (max, Σ) pair and those of the other blocks of its cluster, combined in every block
// to the same bits: each block's pair goes to `mine` (a slot of its shared memory), the cluster
// waits for all, then lane c of every warp reads block c's pair over distributed shared memory and
// the warp combines them as it combined its own lanes'.
template <int kCluster>
__device__ __forceinline__ MaxSum cluster_combine(MaxSum p, MaxSum* mine) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) *mine = p;
  cluster.sync();
  const unsigned lane = threadIdx.x % 32;
  return warp_combine(lane < kCluster ? *cluster.map_shared_rank(mine, lane)
                                      : MaxSum{-INFINITY, 0.0F});
#else
  __trap();  // the launcher runs clusters only on devices that have them
  return p;
#endif
}

__device__ __forceinline__ void cluster_wait_all() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  cooperative_groups::this_cluster().sync();
#endif
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// The held part of a slice comes in as bulk copies, each chunk on its own mbarrier (sm_90 and
// later; kBulk kernels trap elsewhere, where the launcher never runs them).
constexpr bool kHasBulkCopies = true;
#else
constexpr bool kHasBulkCopies = false;
#endif

// The bulk path's chunks of a slice's held part, each copied and waited for on its own: two by
// default, so that pass 1 starts on the first half while the second is on its way; more cost
// more in waits and counts than they overlap (§49, against two at 32 000 and 128 256 words: one
// chunk 2–10 % slower, four 2–5 %, sixteen 21–71 %). At most 16, whose barriers are a few bytes
// of static shared memory.
constexpr int kCopyChunks = 2;
constexpr int kMostChunks = 16;

// The bulk path's register tail (one block of 512 a row): the first kTailVectors · 512 vectors of
// the end that shared memory does not hold, each thread's kTailVectors of them kept in its own
// registers between the passes, so that pass 2 reads none of them again (§50: 0.745 → 0.723 ms at
// 151 936 words with the L2 ask below, 0.573 → 0.563 at 128 256). Ten 16-byte vectors are 40
// registers a thread, which the launch's 128 hold beside the rest with four loads in flight for
// what lies past the tail (eight spill): with 224 KiB held, rows up to 155 648 words (Qwen3's
// 151 936, 73 KiB past what a block's shared memory holds) are read once; a longer row's end past
// the tail is read again as before. Asking for the next row's tail in pass 2, as the chunks are,
// made the chunks' fences wait for those loads (0.836 against 0.753 ms, §50).
constexpr int kTailVectors = 10;

// The bulk path's state: chunk c's barrier completes when its bytes of the block's current row
// have landed; read_by[c] counts the warps whose pass 2 is done with chunk c, and the last of them
// asks for the next row's chunk c in its place.
struct BulkState {
  uint64_t arrived[kMostChunks];
  unsigned read_by[kMostChunks];
};

// Chunk c of the held part of `row`'s slice (vectors [c · chunk, min((c + 1) · chunk, held)) of
// it) copied into `kept` by the copy engine, signalled on its barrier. One thread asks.
template <int kVec, typename Raw>
__device__ __forceinline__ void ask_chunk(BulkState& st, Raw* kept, const __nv_bfloat16* row,
                                          int64_t lo, int64_t held, int64_t chunk, int c) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  const int64_t first = c * chunk;
  const auto bytes = static_cast<uint32_t>((std::min(first + chunk, held) - first) * sizeof(Raw));
  const uint32_t bar = sm90::smem_addr(&st.arrived[c]);
  sm90::mbar_arrive_expect_tx(bar, bytes);
  sm90::bulk_load(sm90::smem_addr(kept + first), row + (lo + first) * kVec, bytes, bar);
#endif
}

// Each row is split into kCluster slices of `slice` vectors, block c of a cluster taking the c-th
// (kCluster 1: the whole row, one block; 2: halves). `held`: the vectors of its slice that pass 1
// keeps in shared memory, all of the slice or a multiple of the block's threads (so that a thread's
// vectors beyond are held + its index, held + its index + kThreads, …). kThreads 512: one block an
// SM; 256: two, 128: four, each cluster on its own rows, so that some read while others write.
//
// kBulk false: each thread loads the held vectors it folds and keeps them itself, so no barrier
// guards them. kBulk true: the copy engine brings the held part in, in chunks of `chunk` vectors
// (a multiple of kThreads, so each thread takes the same vectors of every chunk), each on its
// barrier, the next row's chunk asked for as soon as every warp is done with this row's.
// kTail (bulk only): the vectors of the unheld end each thread keeps in registers between the
// passes (thread t's are held_end + t, held_end + t + kThreads, …); 0 none.
template <int kVec, bool kByInverse, int kThreads, int kCluster, bool kBulk, int kTail>
__global__ void __launch_bounds__(kThreads, 512 / kThreads)
    cross_entropy_kernel(CrossEntropyArgs a, int64_t slice, int64_t held, int64_t chunk,
                         float inverse) {
  static_assert(kTail == 0 || kBulk, "the register tail is the bulk path's");
  constexpr int kWarps = kThreads / 32;
  // The threads' loads in flight: with a register tail, which only rows past its reach use, four
  // (eight and the tail's 40 registers spill).
  constexpr int kBatch = kTail > 0 ? 4 : kInFlight;
  using A = Access<kVec>;
  using Raw = typename A::Raw;
  extern __shared__ __align__(16) unsigned char held_bytes[];
  Raw* const kept = reinterpret_cast<Raw*>(held_bytes);
  // By row parity: a warp can be one row ahead, not two; so can a block of the cluster, whose
  // barrier each row waits for all.
  __shared__ MaxSum partial[2][kWarps];
  __shared__ MaxSum block_pair[2];
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int64_t vectors = a.vocab / kVec;
  const auto rank = static_cast<int64_t>(blockIdx.x % kCluster);
  const int64_t lo = std::min(rank * slice, vectors);
  const int64_t hi = std::min(lo + slice, vectors);
  const int64_t held_end = std::min(lo + held, hi);
  const int64_t tail_end = std::min(held_end + int64_t{kTail} * kThreads, hi);
  // This thread's vectors of the tail: held_end + its index, then every kThreads, `tail_count` of
  // them (the same in every row; one count, so that no address is kept between the passes).
  const int64_t tail_first = held_end + threadIdx.x;
  [[maybe_unused]] const int tail_count =
      tail_first < tail_end ? static_cast<int>((tail_end - tail_first + kThreads - 1) / kThreads)
                            : 0;
  const auto divisor = static_cast<float>(a.divisor);
  const int64_t step = gridDim.x / kCluster;
  auto* const logits = static_cast<__nv_bfloat16*>(a.logits);

  // The bulk path's chunks of this block's held part (fewer where its slice is short).
  [[maybe_unused]] const int chunks =
      kBulk ? static_cast<int>((held_end - lo + chunk - 1) / chunk) : 0;
  [[maybe_unused]] __shared__ BulkState bulk;
  if constexpr (kBulk) {
    if constexpr (!kHasBulkCopies) __trap();  // the launcher runs kBulk only where it exists
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    const int64_t first_row = blockIdx.x / kCluster;
    if (threadIdx.x == 0) {
      for (int c = 0; c < chunks; ++c) {
        sm90::mbar_init(sm90::smem_addr(&bulk.arrived[c]), 1);
        bulk.read_by[c] = 0;
      }
      sm90::mbar_init_fence();
      if (first_row < a.rows)
        for (int c = 0; c < chunks; ++c)
          ask_chunk<kVec>(bulk, kept, logits + first_row * a.vocab, lo, held_end - lo, chunk, c);
    }
    __syncthreads();
#endif
  }

  int parity = 0;
  for (int64_t r = blockIdx.x / kCluster; r < a.rows; r += step, parity ^= 1) {
    auto* row = logits + r * a.vocab;
    const int64_t target = a.targets[r];
    const bool valid = target >= 0 && target < a.vocab;
    // Read before the barriers below, after which pass 2 may overwrite it.
    const float x_target =
        rank == 0 && threadIdx.x == 0 && valid ? __bfloat162float(row[target]) : 0.0F;

    MaxSum p{-INFINITY, 0.0F};
    // The threads' own loads: the whole slice, or (bulk) the end that is not held, past the
    // register tail (before the tail's loads, so that the two are not live at once).
    for (int64_t first = (kBulk ? tail_end : lo) + threadIdx.x; first < hi;
         first += kBatch * kThreads) {
      Raw raw[kBatch];
      load_batch<kVec, kThreads, kBatch>(row, first, hi, raw);
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int64_t v = first + j * kThreads;
        if (v >= hi) break;
        // This thread's own vector, read back by this thread in pass 2: no barrier between.
        if (!kBulk && v < held_end) kept[v - lo] = raw[j];
        float x[kVec];
        A::widen(raw[j], x);
        fold(p, x);
      }
    }
    [[maybe_unused]] Raw tail[kTail > 0 ? kTail : 1];
    if constexpr (kTail > 0) {
      const __nv_bfloat16* const at = row + tail_first * kVec;
#pragma unroll
      for (int j = 0; j < kTail; ++j)
        if (j < tail_count) tail[j] = A::load(at + j * kThreads * kVec);
#pragma unroll
      for (int j = 0; j < kTail; ++j)
        if (j < tail_count) {
          float x[kVec];
          A::widen(tail[j], x);
          fold(p, x);
        }
    }
    if constexpr (kBulk) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
      for (int c = 0; c < chunks; ++c) {
        sm90::mbar_wait(sm90::smem_addr(&bulk.arrived[c]), static_cast<uint32_t>(parity));
        const int64_t end = std::min((c + 1) * chunk, held_end - lo);
#pragma unroll 2
        for (int64_t i = c * chunk + threadIdx.x; i < end; i += kThreads) {
          float x[kVec];
          A::widen(kept[i], x);
          fold(p, x);
        }
      }
#endif
    }
    p = warp_combine(p);
    if (lane == 0) partial[parity][warp] = p;
    __syncthreads();
    p = warp_combine(lane < kWarps ? partial[parity][lane] : MaxSum{-INFINITY, 0.0F});
    if constexpr (kCluster > 1) p = cluster_combine<kCluster>(p, &block_pair[parity]);
    const float log_sum = logf(p.sum);
    const float inverse_sum = 1.0F / p.sum;
    if (rank == 0 && threadIdx.x == 0) a.loss[r] = valid ? -((x_target - p.max) - log_sum) : NAN;

    // The slice's end that shared memory did not hold, first: the register tail, then what is past
    // it, read again.
    if constexpr (kTail > 0) {
#pragma unroll
      for (int j = 0; j < kTail; ++j)
        if (j < tail_count)
          write_gradient<kVec, kByInverse>(row, tail_first + j * kThreads, tail[j], p.max,
                                           inverse_sum, target, divisor, inverse);
    }
    for (int64_t first = tail_end + threadIdx.x; first < hi; first += kBatch * kThreads) {
      Raw raw[kBatch];
      load_batch<kVec, kThreads, kBatch>(row, first, hi, raw);
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int64_t v = first + j * kThreads;
        if (v >= hi) break;
        write_gradient<kVec, kByInverse>(row, v, raw[j], p.max, inverse_sum, target, divisor,
                                         inverse);
      }
    }
    if constexpr (kBulk) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
      const int64_t next = r + step;
      for (int c = 0; c < chunks; ++c) {
        const int64_t end = std::min((c + 1) * chunk, held_end - lo);
#pragma unroll 2
        for (int64_t i = c * chunk + threadIdx.x; i < end; i += kThreads)
          write_gradient<kVec, kByInverse>(row, lo + i, kept[i], p.max, inverse_sum, target,
                                           divisor, inverse);
        // The warp's reads of the chunk before its count (release); the last warp's count before
        // its copy over the chunk, the async proxy's write after the threads' reads.
        __syncwarp();
        if (lane == 0) {
          __threadfence_block();
          if (atomicInc(&bulk.read_by[c], kWarps - 1) == kWarps - 1 && next < a.rows) {
            __threadfence_block();
            sm90::fence_async_shared();
            ask_chunk<kVec>(bulk, kept, logits + next * a.vocab, lo, held_end - lo, chunk, c);
            // The next row's unheld end asked into L2 with its first chunk, for pass 1's loads,
            // which then wait on L2, not HBM (§50: 0.745 → 0.723 ms at 151 936 words).
            if (c == 0 && hi > held_end)
              sm90::bulk_prefetch_l2(logits + (next * a.vocab + held_end * kVec),
                                     static_cast<uint32_t>((hi - held_end) * sizeof(Raw)));
          }
        }
      }
#endif
    } else {
#pragma unroll 4
      for (int64_t v = lo + threadIdx.x; v < held_end; v += kThreads)
        write_gradient<kVec, kByInverse>(row, v, kept[v - lo], p.max, inverse_sum, target, divisor,
                                         inverse);
    }
  }
  // No block leaves while another of its cluster may still read its last pair.
  if constexpr (kCluster > 1) cluster_wait_all();
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

// How a launch splits the rows: threads a block, blocks a cluster (each a slice of every row),
// and whether the copy engine brings in the held part.
struct Shape {
  int threads = 512;
  int cluster = 1;
  bool bulk = false;
  bool tail = false;  // kTailVectors a thread of the unheld end kept in registers
};

// What the caller gave, the rest chosen. The held part by bulk copies wherever the device has them
// (`hopper`: bulk copies and clusters, sm_90 and later; §49: 6 % faster at 32 000 words, 13 % at
// 128 256, 2 % at 151 936). One block a row: the most blocks an SM whose shares of shared memory
// hold a whole row each (§47: 256 threads at 0.161 ms against 512's 0.186 on 32 000 words, a row
// in 112 KiB: several blocks an SM let one read while another writes). A row that no share of two
// holds (128 256 and 151 936 words): by bulk copies, one block of 512 an SM holding most of it
// (§49: 0.574 ms at 128 256 words against a cluster of two's 0.625, 0.786 against 0.801 at
// 151 936); by the threads' loads, two blocks of 256 an SM and a cluster of two a row, each block
// holding most of its half (§48: 0.653 ms against one block of 512's 0.672 at 128 256 words;
// clusters of four and eight lost more at their barriers than they gained).
Shape choose_shape(const CrossEntropyArgs& a, size_t row_bytes, bool hopper) {
  const int alone = row_bytes <= most_held_bytes(4)   ? 128
                    : row_bytes <= most_held_bytes(2) ? 256
                    : row_bytes <= most_held_bytes(1) ? 512
                                                      : 0;  // no share holds it
  Shape s;
  s.bulk = a.copy_engine < 0 ? hopper : a.copy_engine == 1;
  const bool split = a.block_threads == 0 && alone == 0 && hopper && !s.bulk;
  s.cluster = a.cluster_blocks != 0 ? a.cluster_blocks : split ? 2 : 1;
  s.threads = a.block_threads != 0 ? a.block_threads
              : s.cluster == 2     ? 256
              : alone != 0         ? alone
                                   : 512;
  const bool can_tail = s.bulk && s.threads == 512 && s.cluster == 1;
  LPBENCH_CUDA_REQUIRE(a.tail_in_registers != 1 || can_tail,
                       "tail_in_registers 1 needs the bulk copies' launch of one block of 512 "
                       "threads a row (copy_engine 1 or -1 on Hopper, block_threads 0 or 512, "
                       "cluster_blocks 0 or 1); give -1 or 0");
  s.tail = a.tail_in_registers < 0 ? can_tail && alone == 0 : a.tail_in_registers == 1;
  return s;
}

template <int kVec, bool kByInverse, int kThreads, int kCluster, bool kBulk, int kTail = 0>
void launch(const CrossEntropyArgs& a, cudaStream_t stream) {
  using Raw = typename Access<kVec>::Raw;
  auto* const kernel = &cross_entropy_kernel<kVec, kByInverse, kThreads, kCluster, kBulk, kTail>;
  const int64_t vectors = a.vocab / kVec;
  const int64_t slice = (vectors + kCluster - 1) / kCluster;
  const size_t most = most_held_bytes(512 / kThreads);
  const size_t room = a.held_bytes < 0 ? most : std::min(static_cast<size_t>(a.held_bytes), most);
  int64_t held = static_cast<int64_t>(room / sizeof(Raw));
  held = held >= slice ? slice : held / kThreads * kThreads;
  // The bulk path's chunks: the held part in `copy_chunks` (or two) pieces of whole multiples of
  // the block's threads, so that each thread takes the same vectors of every chunk.
  const int64_t pieces = a.copy_chunks != 0 ? a.copy_chunks : kCopyChunks;
  const int64_t chunk = std::max<int64_t>(
      kThreads, ((held + pieces - 1) / pieces + kThreads - 1) / kThreads * kThreads);
  const size_t smem = static_cast<size_t>(held) * sizeof(Raw);
  allow_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), smem);
  const float inverse = 1.0F / static_cast<float>(a.divisor);
  if constexpr (kCluster == 1) {
    const int64_t blocks =
        resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, smem, a.rows);
    kernel<<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(a, slice, held, chunk,
                                                                      inverse);
    LPBENCH_CUDA_CHECK_LAUNCH();
  } else {
    const int64_t clusters =
        resident_clusters(reinterpret_cast<const void*>(kernel), kThreads, smem, kCluster, a.rows);
    const ClusterLaunch grid(clusters * kCluster, kThreads, smem, kCluster, stream);
    LPBENCH_CUDA_CHECK(cudaLaunchKernelEx(&grid.config(), kernel, a, slice, held, chunk, inverse));
  }
}

template <int kVec, bool kByInverse, int kThreads>
void launch(const CrossEntropyArgs& a, Shape s, cudaStream_t stream) {
  // Clusters and bulk copies on the 16-byte path only (the element path, an odd vocabulary, keeps
  // one block a row and its threads' loads): each kernel is compiled for every shape it may take.
  if constexpr (kVec == 1) {
    launch<kVec, kByInverse, kThreads, 1, false>(a, stream);
  } else if (s.cluster == 2) {
    if (s.bulk) {
      launch<kVec, kByInverse, kThreads, 2, true>(a, stream);
    } else {
      launch<kVec, kByInverse, kThreads, 2, false>(a, stream);
    }
  } else if (s.bulk) {
    if constexpr (kThreads == 512) {
      if (s.tail) {
        launch<kVec, kByInverse, kThreads, 1, true, kTailVectors>(a, stream);
        return;
      }
    }
    launch<kVec, kByInverse, kThreads, 1, true>(a, stream);
  } else {
    launch<kVec, kByInverse, kThreads, 1, false>(a, stream);
  }
}

template <int kVec, bool kByInverse>
void launch(const CrossEntropyArgs& a, Shape s, cudaStream_t stream) {
  if (s.threads == 512) {
    launch<kVec, kByInverse, 512>(a, s, stream);
  } else if (s.threads == 128) {
    launch<kVec, kByInverse, 128>(a, s, stream);
  } else {
    launch<kVec, kByInverse, 256>(a, s, stream);
  }
}

template <int kVec>
void launch(const CrossEntropyArgs& a, Shape s, cudaStream_t stream) {
  if ((a.divisor & (a.divisor - 1)) == 0) {
    launch<kVec, true>(a, s, stream);
  } else {
    launch<kVec, false>(a, s, stream);
  }
}

bool by_vectors(const CrossEntropyArgs& a) {
  return a.vocab % kBf16PerVector == 0 && reinterpret_cast<uintptr_t>(a.logits) % 16 == 0;
}

Shape shape_of(const CrossEntropyArgs& a) {
  if (!by_vectors(a)) {
    CrossEntropyArgs alone = a;  // the element path: one block a row, its threads' own loads
    alone.cluster_blocks = 1;
    alone.copy_engine = 0;
    alone.tail_in_registers = 0;
    return choose_shape(alone, a.vocab * sizeof(__nv_bfloat16), false);
  }
  return choose_shape(a, a.vocab * sizeof(__nv_bfloat16),
                      device_attribute(cudaDevAttrClusterLaunch) != 0);
}

void check(const CrossEntropyArgs& a) {
  LPBENCH_CUDA_REQUIRE(a.logits != nullptr && a.targets != nullptr && a.loss != nullptr,
                       "logits, targets and loss are needed");
  LPBENCH_CUDA_REQUIRE(a.rows >= 0 && a.vocab > 0, "rows must be ≥ 0 and the vocabulary > 0");
  LPBENCH_CUDA_REQUIRE(a.held_bytes >= -1, "held_bytes is -1 (the most the device allows) or ≥ 0");
  LPBENCH_CUDA_REQUIRE(a.block_threads == 0 || a.block_threads == 128 || a.block_threads == 256 ||
                           a.block_threads == 512,
                       "block_threads is 0 (the kernel's choice), 128, 256 or 512");
  LPBENCH_CUDA_REQUIRE(a.cluster_blocks >= 0 && a.cluster_blocks <= 2,
                       "cluster_blocks is 0 (the kernel's choice), 1 or 2");
  LPBENCH_CUDA_REQUIRE(a.cluster_blocks <= 1 || device_attribute(cudaDevAttrClusterLaunch) != 0,
                       "cluster_blocks > 1 needs a device with thread-block clusters (Hopper or "
                       "later); give 0 or 1");
  LPBENCH_CUDA_REQUIRE(a.copy_engine >= -1 && a.copy_engine <= 1,
                       "copy_engine is -1 (the kernel's choice), 0 or 1");
  LPBENCH_CUDA_REQUIRE(a.copy_engine <= 0 || device_attribute(cudaDevAttrClusterLaunch) != 0,
                       "copy_engine 1 needs a device with bulk copies (Hopper or later); give -1 "
                       "or 0");
  LPBENCH_CUDA_REQUIRE(a.copy_chunks >= 0 && a.copy_chunks <= kMostChunks,
                       "copy_chunks is 0 (the kernel's choice) or 1 to 16");
  LPBENCH_CUDA_REQUIRE(a.tail_in_registers >= -1 && a.tail_in_registers <= 1,
                       "tail_in_registers is -1 (the kernel's choice), 0 or 1");
  LPBENCH_CUDA_REQUIRE(a.divisor > 0 && a.divisor <= (int64_t{1} << 24),
                       "the divisor must be in [1, 2^24], where FP32 holds it exactly");
}

}  // namespace

CrossEntropyShape softmax_cross_entropy_shape(const CrossEntropyArgs& a) {
  check(a);
  const Shape s = shape_of(a);
  return {s.threads, s.cluster, s.bulk ? 1 : 0, s.tail ? 1 : 0};
}

void softmax_cross_entropy(const CrossEntropyArgs& a, cudaStream_t stream) {
  check(a);
  if (a.rows == 0) return;
  const NvtxRange range("lpbench softmax_cross_entropy");
  const Shape s = shape_of(a);
  if (by_vectors(a)) {
    launch<kBf16PerVector>(a, s, stream);
  } else {
    launch<1>(a, s, stream);
  }
}

}  // namespace lpbench::cuda
