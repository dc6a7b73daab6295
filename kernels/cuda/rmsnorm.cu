// RMSNorm forward (with an optional residual add first) and backward, one pass over the rows
// each. A row is split among `tpr` threads (a power of two): rows of at most 32 vectors of 8 go
// several to a block (one shuffle reduction per row), longer rows one to a block of up to 1024
// threads (shuffles, then shared memory). Each thread keeps its at most kMaxVectors vectors of
// the row in registers between the reduction and the output, so the row is read once.
//
// The backward walks the rows with a grid of as many blocks as the GPU holds, each thread
// accumulating the weight gradient of its columns in registers over the rows it visits and
// fetching the rows ahead into a shared-memory ring (cp.async) while it reduces the current one;
// the per-block partial sums go to the workspace and a second kernel adds them up per column.
//
// Under saved=int8 the forward writes h's INT8 blocks from its registers and the backward reads
// them in place of h (saved_int8_blocks.cuh). A block of 128 is then 16 vectors, held by 16
// consecutive lanes in one step of a thread's loop: rows a multiple of 128 give tpr ≥ 16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/partial_sums.cuh"
#include "kernels/cuda/resident_grid.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rmsnorm_math.cuh"
#include "kernels/cuda/saved_int8_blocks.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kSmallBlock = 256;  // threads of a block holding several short rows
// Registers bound what a thread holds: the forward keeps 16 values a vector (the row's and their
// weights), the backward 32 (the gradient, the normalized input, the weights and the weight
// gradient's sums). 512 threads with 4 and 2 vectors each stay within the register file without
// spills (ptxas, sm_90a): rows of up to 16384 and 8192 elements, past every seed model's hidden
// size.
constexpr int kForwardThreads = 512;
constexpr int kForwardVectors = 4;
constexpr int kBackwardThreads = 512;
constexpr int kBackwardVectors = 2;
constexpr int kBackwardPerThread = 2;

struct Layout {
  int tpr = 1;             // threads per row, a power of two
  int rows_per_block = 1;  // 1 when tpr ≥ 32
  int threads = 1;
  int vectors = 1;  // per thread, 1..kMaxVectors
};

// `per_thread`: the vectors a thread may hold where the row allows. The forward holds up to
// kForwardVectors, the backward kBackwardPerThread: what a row costs a thread (its ring slots,
// its sum across the warps) is then paid for 16 elements, not 8. At one vector a thread the
// llama2-7b backward kernel issued 16.4 M instructions in 30.1 µs, at two 12.3 M in 25.7 µs, at
// half the occupancy (docs/perf-log.md §43).
Layout layout_for(int64_t cols, int per_thread, int max_threads) {
  const int64_t vectors = cols / kBf16PerVector;
  Layout l;
  while (l.tpr < max_threads && int64_t{l.tpr} * per_thread < vectors)
    l.tpr *= 2;
  // Short rows: enough threads that each holds one vector, up to a warp.
  while (l.tpr < 32 && l.tpr < vectors)
    l.tpr *= 2;
  l.vectors = static_cast<int>((vectors + l.tpr - 1) / l.tpr);
  if (l.tpr < 32) {
    l.rows_per_block = kSmallBlock / l.tpr;
    l.threads = kSmallBlock;
  } else {
    l.threads = l.tpr;
  }
  return l;
}

void check_shape(int64_t rows, int64_t cols, int max_threads, int max_vectors, const char* who) {
  LPBENCH_CUDA_REQUIRE(rows > 0 && cols > 0, std::string(who) + ": empty matrix");
  LPBENCH_CUDA_REQUIRE(
      cols % kBf16PerVector == 0,
      std::string(who) + ": the row length must be a multiple of 8, got " + std::to_string(cols));
  const int64_t longest = int64_t{max_vectors} * max_threads * kBf16PerVector;
  LPBENCH_CUDA_REQUIRE(cols <= longest, std::string(who) + ": rows of at most " +
                                            std::to_string(longest) + " elements");
}

void check_aligned(const void* p, const char* what) {
  LPBENCH_CUDA_REQUIRE(p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0,
                       std::string(what) + " must be 16-byte aligned");
}

// The sum of `v` over the `tpr` threads of a row (every thread of the block calls it). The
// shuffle steps are unrolled (a loop on the run-time width cost a branch and its bookkeeping a
// step), and for rows across warps each lane reads one warp's sum and the warp adds them in a
// shuffle tree: every thread adding all `tpr / 32` sums itself took about 45 of the ~310
// instructions a thread of the long-row backward issued a row (SASS; docs/perf-log.md §43).
// Short rows (tpr < 32) keep their order: qk_norm_rope.cu's lanes_sum matches it bit for bit.
__device__ __forceinline__ float row_sum(float v, int tpr, float* shared) {
  if (tpr < 32) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      if (offset < tpr) v += __shfl_xor_sync(0xffffffffu, v, offset, tpr);
    return v;
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (tpr == 32) return v;
  const int warps = tpr / 32;  // a power of two, 2 to 32
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  __syncthreads();  // `shared` may still be read from the previous row
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = shared[lane & (warps - 1)];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    if (offset < warps) total += __shfl_xor_sync(0xffffffffu, total, offset);
  return total;
}

// The forward walks the rows grid-strided too, with a ring like the backward's (below) for x and
// the residual: one row a block and no ring moved 54 % (63 % with the residual) of the HBM rate,
// each block waiting on its row's loads, then on the weight's (docs/perf-log.md §36).
constexpr int kForwardStages = 3;

size_t forward_ring_bytes(int vectors, int threads) {
  return size_t{kForwardStages} * threads * 2 * vectors * sizeof(uint4);
}

// One block an SM as the bound: with the default, ptxas held the two-vector kernel to 64
// registers and spilled 12 bytes once row_sum's shuffles were unrolled (80 without the bound).
template <int kVectors>
__global__ void __launch_bounds__(kForwardThreads, 1)
    rmsnorm_forward_kernel(const RmsNormArgs a, const int tpr, const int rows_per_block) {
  __shared__ float shared[32];
  extern __shared__ uint4 ring[];  // [stage][operand: x, residual][vector][thread]
  const auto* x = static_cast<const __nv_bfloat16*>(a.x);
  const auto* r = static_cast<const __nv_bfloat16*>(a.residual);
  const int sub = static_cast<int>(threadIdx.x) / tpr;
  const int lane = static_cast<int>(threadIdx.x) % tpr;
  const int64_t vectors = a.cols / kBf16PerVector;
  auto slot = [&](int stage, int operand, int i) -> uint4& {
    return ring[((stage * 2 + operand) * kVectors + i) * blockDim.x + threadIdx.x];
  };
  const int64_t stride = static_cast<int64_t>(gridDim.x) * rows_per_block;
  auto fetch = [&](int64_t row, int stage) {
    if (row < a.rows) {
#pragma unroll
      for (int i = 0; i < kVectors; ++i) {
        const int64_t v = lane + static_cast<int64_t>(i) * tpr;
        if (v >= vectors) continue;
        const int64_t at = row * a.cols + v * kBf16PerVector;
        cp_async16(smem_addr(&slot(stage, 0, i)), x + at);
        if (r != nullptr) cp_async16(smem_addr(&slot(stage, 1, i)), r + at);
      }
    }
    cp_async_commit();
  };
  const int64_t first = static_cast<int64_t>(blockIdx.x) * rows_per_block + sub;
#pragma unroll
  for (int stage = 0; stage < kForwardStages - 1; ++stage)
    fetch(first + stage * stride, stage);
  auto* y = static_cast<__nv_bfloat16*>(a.y);
  auto* h_out = static_cast<__nv_bfloat16*>(a.h);
  // This thread's columns of the weight, held across the rows (read again for every row, they
  // were half of the kernel's L1 traffic and its longest stalls: docs/perf-log.md §41).
  float w[kVectors][kBf16PerVector] = {};
#pragma unroll
  for (int i = 0; i < kVectors; ++i) {
    const int64_t v = lane + static_cast<int64_t>(i) * tpr;
    if (v < vectors) load_float8(a.weight + v * kBf16PerVector, w[i]);
  }
  uint32_t amax = 0;
  int stage = 0;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * rows_per_block; base < a.rows;
       base += stride) {
    const int64_t row = base + sub;
    fetch(row + (kForwardStages - 1) * stride, (stage + kForwardStages - 1) % kForwardStages);
    cp_async_wait<kForwardStages - 1>();  // this row's group has landed
    const bool live = row < a.rows;
    Bf16x8 h[kVectors];
    float squares = 0.0F;
#pragma unroll
    for (int i = 0; i < kVectors; ++i) {
      const int64_t v = lane + static_cast<int64_t>(i) * tpr;
      if (live && v < vectors) {
        h[i] = unpack_bf16x8(slot(stage, 0, i));
        if (r != nullptr) {
          const Bf16x8 add = unpack_bf16x8(slot(stage, 1, i));
#pragma unroll
          for (int e = 0; e < kBf16PerVector; ++e)
            h[i].v[e] = round_bf16(h[i].v[e] + add.v[e]);
        }
#pragma unroll
        for (int e = 0; e < kBf16PerVector; ++e)
          squares += h[i].v[e] * h[i].v[e];
      }
    }
    squares = row_sum(squares, tpr, shared);
    const float rstd = 1.0F / sqrtf(squares / static_cast<float>(a.cols) + a.eps);
    if (live) {
      if (lane == 0) a.rstd[row] = rstd;
#pragma unroll
      for (int i = 0; i < kVectors; ++i) {
        const int64_t v = lane + static_cast<int64_t>(i) * tpr;
        if (v >= vectors) continue;
        const int64_t col = v * kBf16PerVector;
        if (r != nullptr && h_out != nullptr) store_bf16x8(h_out + row * a.cols + col, h[i]);
        if (a.keep.values != nullptr) keep_int8x8(h[i], row, col, a.cols, a.keep);
        // Without y, its consumer's quantization computes y from h and rstd; under a current
        // scale that quantization needs y's amax first, found here from the same values.
        if (y == nullptr && a.y_amax == nullptr) continue;
        Bf16x8 out;
#pragma unroll
        for (int e = 0; e < kBf16PerVector; ++e)
          out.v[e] = rmsnorm_value(h[i].v[e], rstd, w[i][e]);
        if (y != nullptr) {
          store_bf16x8(y + row * a.cols + col, out, amax);
        } else {
          (void)pack_bf16x8(out, amax);
        }
      }
    }
    stage = (stage + 1) % kForwardStages;
  }
  cp_async_wait<0>();  // the groups fetched past the last row carry nothing; none is left open
  // No early return above for the rows past the end: report_amax synchronizes the whole block.
  report_amax(a.y_amax, amax_of_pairs(amax));
}

// The backward's ring: each thread copies its own 16-byte words of dy, h and dh_in (and the row's
// rstd) for the rows after the current one into shared memory while the current one is reduced,
// and reads back only what it copied, so the ring needs no barrier of its own. Three stages keep
// two rows in flight a block; a thread waited on each row's loads in turn before, and the kernel
// moved 33-39 % of the HBM rate, 46-58 % with the ring. Four vectors a thread, each read twice
// from the ring (the sum, then dh) so as not to hold them, ran no faster: 46-56 %, ~3 % slower
// with dh_in (docs/perf-log.md §36).
constexpr int kBackwardStages = 3;
constexpr int kStagedOperands = 3;  // dy, h, dh_in

size_t backward_ring_bytes(int vectors, int threads) {
  return size_t{kBackwardStages} * threads *
         (kStagedOperands * vectors * sizeof(uint4) + sizeof(float));
}

template <int kVectors>
__global__ void __launch_bounds__(kBackwardThreads, kVectors == 1 ? 2 : 1)
    rmsnorm_backward_kernel(const RmsNormBackwardArgs a, const int tpr, const int rows_per_block,
                            float* partial) {
  __shared__ float shared[32];
  let_dependents_launch();  // the partial sums' grid (sum_partial_rows) waits for this one to end
  extern __shared__ uint4 ring[];  // [stage][operand][vector][thread], then rstd [stage][thread]
  float* ring_rstd =
      reinterpret_cast<float*>(ring + kBackwardStages * kStagedOperands * kVectors * blockDim.x);
  const auto* dy = static_cast<const __nv_bfloat16*>(a.dy);
  const auto* hx = static_cast<const __nv_bfloat16*>(a.h);
  const auto* dh_in = static_cast<const __nv_bfloat16*>(a.dh_in);
  auto* dh = static_cast<__nv_bfloat16*>(a.dh);
  const bool kept = a.h_kept.values != nullptr;  // h from its INT8 blocks, read when reduced
  const int sub = static_cast<int>(threadIdx.x) / tpr;
  const int lane = static_cast<int>(threadIdx.x) % tpr;
  const int64_t vectors = a.cols / kBf16PerVector;
  auto slot = [&](int stage, int operand, int i) -> uint4& {
    return ring[((stage * kStagedOperands + operand) * kVectors + i) * blockDim.x + threadIdx.x];
  };
  const int64_t stride = static_cast<int64_t>(gridDim.x) * rows_per_block;
  // This thread's part of `row` into `stage`, as one commit group (empty past the last row). The
  // shared addresses are offsets from this thread's first slot, and the row's global offset is
  // taken once: per row, the fetch is most of what a one-vector thread does besides its math.
  const uint32_t first_slot = smem_addr(&slot(0, 0, 0));
  const uint32_t vector_bytes = blockDim.x * sizeof(uint4);
  const uint32_t operand_bytes = kVectors * vector_bytes;
  const uint32_t first_rstd = smem_addr(&ring_rstd[threadIdx.x]);
  const int64_t lane_at = static_cast<int64_t>(lane) * kBf16PerVector;
  auto fetch = [&](int64_t row, int stage) {
    if (row < a.rows) {
      const int64_t row_at = row * a.cols + lane_at;
      const uint32_t to = first_slot + stage * kStagedOperands * operand_bytes;
#pragma unroll
      for (int i = 0; i < kVectors; ++i) {
        if (lane + i * tpr >= vectors) continue;
        const int64_t at = row_at + static_cast<int64_t>(i) * tpr * kBf16PerVector;
        const uint32_t vector_to = to + i * vector_bytes;
        cp_async16(vector_to, dy + at);
        if (!kept) cp_async16(vector_to + operand_bytes, hx + at);
        if (dh_in != nullptr) cp_async16(vector_to + 2 * operand_bytes, dh_in + at);
      }
      cp_async4(first_rstd + stage * blockDim.x * sizeof(float), a.rstd + row);
    }
    cp_async_commit();
  };
  const int64_t first = static_cast<int64_t>(blockIdx.x) * rows_per_block + sub;
#pragma unroll
  for (int stage = 0; stage < kBackwardStages - 1; ++stage)
    fetch(first + stage * stride, stage);

  // This thread's columns of the weight, held across the rows.
  float w[kVectors][kBf16PerVector] = {};
#pragma unroll
  for (int i = 0; i < kVectors; ++i) {
    const int64_t v = lane + static_cast<int64_t>(i) * tpr;
    if (v >= vectors) continue;
    load_float8(a.weight + v * kBf16PerVector, w[i]);
  }
  float dw[kVectors][kBf16PerVector] = {};
  uint32_t amax = 0;
  int stage = 0;
  int ahead = kBackwardStages - 1;  // the stage the row kBackwardStages - 1 strides on goes to
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * rows_per_block; base < a.rows;
       base += stride) {
    const int64_t row = base + sub;
    fetch(row + (kBackwardStages - 1) * stride, ahead);
    cp_async_wait<kBackwardStages - 1>();  // this row's group has landed
    const bool live = row < a.rows;
    const float rstd = live ? ring_rstd[stage * blockDim.x + threadIdx.x] : 0.0F;
    Bf16x8 g[kVectors];
    Bf16x8 xhat[kVectors];
    float dot = 0.0F;
#pragma unroll
    for (int i = 0; i < kVectors; ++i) {
      const int64_t v = lane + static_cast<int64_t>(i) * tpr;
      if (live && v < vectors) {
        g[i] = unpack_bf16x8(slot(stage, 0, i));
        xhat[i] = kept ? restore_int8x8(a.h_kept, row, v * kBf16PerVector, a.cols)
                       : unpack_bf16x8(slot(stage, 1, i));
#pragma unroll
        for (int e = 0; e < kBf16PerVector; ++e) {
          xhat[i].v[e] *= rstd;
          dw[i][e] += g[i].v[e] * xhat[i].v[e];
          g[i].v[e] *= w[i][e];
          dot += g[i].v[e] * xhat[i].v[e];
        }
      }
    }
    dot = row_sum(dot, tpr, shared);
    const float mean = dot / static_cast<float>(a.cols);
    if (live) {
#pragma unroll
      for (int i = 0; i < kVectors; ++i) {
        const int64_t v = lane + static_cast<int64_t>(i) * tpr;
        if (v >= vectors) continue;
        Bf16x8 out;
#pragma unroll
        for (int e = 0; e < kBf16PerVector; ++e)
          out.v[e] = rstd * (g[i].v[e] - xhat[i].v[e] * mean);
        if (dh_in != nullptr) {
          const Bf16x8 more = unpack_bf16x8(slot(stage, 2, i));
#pragma unroll
          for (int e = 0; e < kBf16PerVector; ++e)
            out.v[e] += more.v[e];
        }
        store_bf16x8(dh + row * a.cols + v * kBf16PerVector, out, amax);
      }
    }
    ahead = stage;
    stage = stage + 1 == kBackwardStages ? 0 : stage + 1;
  }
  cp_async_wait<0>();  // the groups fetched past the last row carry nothing; none is left open
  report_amax(a.dh_amax, amax_of_pairs(amax));
  // This thread's columns, summed over the rows it visited: one partial row per (block, sub).
  float* mine = partial + (static_cast<int64_t>(blockIdx.x) * rows_per_block + sub) * a.cols;
#pragma unroll
  for (int i = 0; i < kVectors; ++i) {
    const int64_t v = lane + static_cast<int64_t>(i) * tpr;
    if (v >= vectors) continue;
    auto* to = reinterpret_cast<float4*>(mine + v * kBf16PerVector);
    to[0] = make_float4(dw[i][0], dw[i][1], dw[i][2], dw[i][3]);
    to[1] = make_float4(dw[i][4], dw[i][5], dw[i][6], dw[i][7]);
  }
}

// Calls fn with the compile-time vector count for `vectors`: 1, 2, or (up to kMax) 4.
template <int kMax, typename Fn>
void with_vectors(int vectors, Fn&& fn) {
  if (vectors <= 1) {
    fn(std::integral_constant<int, 1>{});
  } else if (vectors == 2 || kMax == 2) {
    fn(std::integral_constant<int, 2>{});
  } else {
    fn(std::integral_constant<int, kMax>{});
  }
}

}  // namespace

void rmsnorm_forward(const RmsNormArgs& a, cudaStream_t stream) {
  check_shape(a.rows, a.cols, kForwardThreads, kForwardVectors, "rmsnorm_forward");
  LPBENCH_CUDA_REQUIRE(a.x && a.weight && a.rstd, "x, weight and rstd are needed");
  LPBENCH_CUDA_REQUIRE(a.residual == nullptr || a.h != nullptr,
                       "with a residual, h (x + residual) is written too");
  const void* pointers[] = {a.x, a.residual, a.weight, a.h, a.y};
  for (const void* p : pointers)
    check_aligned(p, "rmsnorm_forward's matrices");
  check_int8_blocks(a.keep.values, a.keep.scales, a.cols, "rmsnorm_forward");
  const NvtxRange range("lpbench rmsnorm_forward");
  const Layout l = layout_for(a.cols, kForwardVectors, kForwardThreads);
  with_vectors<kForwardVectors>(l.vectors, [&](auto n) {
    const auto kernel = rmsnorm_forward_kernel<decltype(n)::value>;
    const size_t ring = forward_ring_bytes(decltype(n)::value, l.threads);
    allow_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), ring);
    const int64_t blocks = resident_blocks(reinterpret_cast<const void*>(kernel), l.threads, ring,
                                           (a.rows + l.rows_per_block - 1) / l.rows_per_block);
    kernel<<<static_cast<unsigned>(blocks), l.threads, ring, stream>>>(a, l.tpr, l.rows_per_block);
  });
  LPBENCH_CUDA_CHECK_LAUNCH();
}

size_t rmsnorm_backward_workspace_bytes(int64_t rows, int64_t cols) {
  const Layout l = layout_for(cols, kBackwardPerThread, kBackwardThreads);
  return static_cast<size_t>(one_wave_blocks(rows, l.rows_per_block, l.threads) * l.rows_per_block *
                             cols) *
         sizeof(float);
}

void rmsnorm_backward(const RmsNormBackwardArgs& a, cudaStream_t stream) {
  check_shape(a.rows, a.cols, kBackwardThreads, kBackwardVectors, "rmsnorm_backward");
  LPBENCH_CUDA_REQUIRE(
      a.dy && (a.h || a.h_kept.values) && a.weight && a.rstd && a.dh && a.dweight && a.workspace,
      "dy, h, weight, rstd, dh, dweight and the workspace are needed");
  const void* pointers[] = {a.dy, a.h, a.dh_in, a.dh, a.weight, a.workspace};
  for (const void* p : pointers)
    check_aligned(p, "rmsnorm_backward's matrices");
  check_int8_blocks(a.h_kept.values, a.h_kept.scales, a.cols, "rmsnorm_backward");
  const NvtxRange range("lpbench rmsnorm_backward");
  const Layout l = layout_for(a.cols, kBackwardPerThread, kBackwardThreads);
  auto* partial = static_cast<float*>(a.workspace);
  int64_t blocks = 0;
  with_vectors<kBackwardVectors>(l.vectors, [&](auto n) {
    const auto kernel = rmsnorm_backward_kernel<decltype(n)::value>;
    const size_t ring = backward_ring_bytes(decltype(n)::value, l.threads);
    allow_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), ring);
    // As many blocks as the GPU holds at once (within the workspace's one wave): each walks its
    // rows with its own ring.
    blocks = resident_blocks(reinterpret_cast<const void*>(kernel), l.threads, ring,
                             one_wave_blocks(a.rows, l.rows_per_block, l.threads));
    kernel<<<static_cast<unsigned>(blocks), l.threads, ring, stream>>>(a, l.tpr, l.rows_per_block,
                                                                       partial);
  });
  LPBENCH_CUDA_CHECK_LAUNCH();
  sum_partial_rows(partial, blocks * l.rows_per_block, a.cols, a.dweight, stream);
}

}  // namespace lpbench::cuda
