// X per row and Xᵀ per row of Xᵀ from one read of BF16 X [rows, cols] (sides multiples of 128),
// with the numerics of kernels/reference/quantize.cpp bit for bit: what int8-row, fp8-row and
// the dy=row modifier quantize every operand into, X for one product and Xᵀ for the other.
//
// The two quantizations do not transpose into each other (a row's scale in one, a column's in
// the other), so before this each took its own path: X the rows kernel (one read), Xᵀ the
// general path (an amax pass over the columns, then the tile kernel): three reads of X and
// five launches. Here one pass finds every row's and every column's amax together, a small
// kernel turns them into scales and inverse scales, and one pass quantizes each value twice
// in registers, storing X's bytes straight away and stashing Xᵀ's in the byte tile
// (quantize_byte_tile.cuh): two reads of X. Where the kernel that wrote X reported every row's
// and column's amax (QuantizeArgs::line_amax), the amax pass is skipped: one read.
//
// Each CTA turns the amaxes of its tile's 128 rows and 128 columns into inverse scales itself, a
// line a thread while its loads are in flight, and the CTAs on the grid's first column and row
// store the rows' and the columns' scales. A kernel of its own did that before, one launch and
// its gap (1.5–2 µs of kernel, and as much idle) for every pair (docs/perf-log.md §58).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/quantize_byte_tile.cuh"
#include "kernels/cuda/quantize_math.cuh"
#include "kernels/cuda/quantize_row_pair.cuh"

namespace lpbench::cuda {

namespace {

using namespace byte_tile;

// max |x| of each row and each column of X into row_amax [rows] and col_amax [cols] (zeroed),
// as FP32 bits: a CTA a tile, one atomic per row and per column of the tile.
__global__ void __launch_bounds__(kThreads)
    row_col_amax_kernel(const __nv_bfloat16* x, int64_t ld, uint32_t* row_amax,
                        uint32_t* col_amax) {
  __shared__ uint32_t partial[kWarps][kTile];  // each warp's column maxima
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  uint4 raw[kLoads];
  load(x, ld, r0, c0, raw);
  uint32_t col_max[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    float f[8];
    quant::Vec<__nv_bfloat16>::unpack(raw[i], f);
    uint32_t m = 0;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const uint32_t a = quant::abs_bits(f[e]);
      m = max(m, a);
      col_max[e] = max(col_max[e], a);
    }
    // A row is one half-warp's: reduce over its 16 lanes.
#pragma unroll
    for (int off = 8; off > 0; off >>= 1)
      m = max(m, __shfl_xor_sync(0xffffffffu, m, off));
    if ((lane & 15) == 0 && m != 0) atomicMax(row_amax + r0 + load_row(i), m);
  }
  // Lanes l and l + 16 hold the same columns of two rows.
#pragma unroll
  for (int e = 0; e < 8; ++e)
    col_max[e] = max(col_max[e], __shfl_xor_sync(0xffffffffu, col_max[e], 16));
  if (lane < 16) {
#pragma unroll
    for (int e = 0; e < 8; ++e)
      partial[warp][load_col() + e] = col_max[e];
  }
  __syncthreads();
  if (threadIdx.x < kTile) {
    uint32_t m = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      m = max(m, partial[w][threadIdx.x]);
    if (m != 0) atomicMax(col_amax + c0 + threadIdx.x, m);
  }
}

struct RowPairParams {
  const __nv_bfloat16* x;
  int64_t ld;
  int64_t rows, cols;
  const uint32_t* row_amax;  // [rows], FP32 bits
  const uint32_t* col_amax;  // [cols], FP32 bits
  float fmax;                // the format's largest value
  DType fmt;
  uint8_t* values;    // [rows, cols], X per row
  uint8_t* values_t;  // [cols, rows], Xᵀ per row of Xᵀ
  float* scales;      // [rows], written by the CTAs of the grid's first column
  float* scales_t;    // [cols], written by the CTAs of the grid's first row
};

// A line a thread: the tile's rows, then its columns.
static_assert(kThreads == 2 * kTile, "the row-pair kernel gives each thread one line's scale");

template <bool kInt8>
__global__ void __launch_bounds__(kThreads) quantize_row_pair_kernel(const RowPairParams p) {
  __shared__ __align__(16) uint32_t tile[kWords];
  __shared__ __align__(16) float line_inv[2 * kTile];  // the tile's rows', then columns' inverses
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int col = load_col();
  uint4 raw[kLoads];
  load(p.x, p.ld, r0, c0, raw);
  {
    const int t = static_cast<int>(threadIdx.x);
    const bool row = t < kTile;
    const int64_t line = row ? r0 + t : c0 + (t - kTile);
    float scale;
    float inv;
    quant::scale_of(__ldg((row ? p.row_amax : p.col_amax) + line), p.fmax, &scale, &inv);
    line_inv[t] = inv;
    if (row && blockIdx.x == 0) p.scales[line] = scale;
    if (!row && blockIdx.y == 0) p.scales_t[line] = scale;
  }
  __syncthreads();
  // The thread's eight columns are the same in every load: their inverse scales, once.
  float col_inv[8];
  const float4 lo = *reinterpret_cast<const float4*>(line_inv + kTile + col);
  const float4 hi = *reinterpret_cast<const float4*>(line_inv + kTile + col + 4);
  col_inv[0] = lo.x;
  col_inv[1] = lo.y;
  col_inv[2] = lo.z;
  col_inv[3] = lo.w;
  col_inv[4] = hi.x;
  col_inv[5] = hi.y;
  col_inv[6] = hi.z;
  col_inv[7] = hi.w;
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int r = load_row(i);
    const float inv = line_inv[r];
    float row_inv[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      row_inv[e] = inv;
    *reinterpret_cast<uint2*>(p.values + (r0 + r) * p.cols + c0 + col) =
        quantize8<kInt8>(raw[i], row_inv, p.fmt);
    stash(tile, r, col, quantize8<kInt8>(raw[i], col_inv, p.fmt));
  }
  __syncthreads();
  store_transposed(tile, p.values_t, p.rows, r0, c0);
}

}  // namespace

bool row_pair_kernel_applies(const QuantizeArgs& a) {
  return a.copy_rowwise && a.x_type == DType::bf16 && !a.transpose && !a.stochastic && !a.delayed &&
         a.amax == nullptr && a.amax_seen == nullptr && a.rows % kTile == 0 &&
         a.cols % kTile == 0 && a.rows / kTile <= 65535 && quant::aligned(a.x, 16) &&
         a.ld % 8 == 0 && quant::aligned(a.values, 8) && quant::aligned(a.values_t, 4);
}

size_t row_pair_workspace_bytes(const QuantizeArgs& a) {
  return static_cast<size_t>(a.rows + a.cols) * sizeof(uint32_t);
}

void quantize_row_pair(const QuantizeArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(row_pair_kernel_applies(a), "the row-pair kernel does not apply");
  LPBENCH_CUDA_REQUIRE(a.workspace != nullptr || a.line_amax != nullptr,
                       "rowwise pairs need a workspace of quantize_workspace_bytes()");
  const dim3 grid(static_cast<unsigned>(a.cols / kTile), static_cast<unsigned>(a.rows / kTile));
  const auto* x = static_cast<const __nv_bfloat16*>(a.x);
  // The amaxes the producer of X reported, or this call's own pass over X into the workspace
  // (zeroed here unless the caller handed it over zeroed).
  const uint32_t* amax = a.line_amax;
  if (amax == nullptr) {
    auto* found = static_cast<uint32_t*>(a.workspace);
    if (!a.workspace_zeroed) {
      LPBENCH_CUDA_CHECK(cudaMemsetAsync(found, 0, row_pair_workspace_bytes(a), stream));
    }
    row_col_amax_kernel<<<grid, kThreads, 0, stream>>>(x, a.ld, found, found + a.rows);
    LPBENCH_CUDA_CHECK_LAUNCH();
    amax = found;
  }
  RowPairParams p{};
  p.x = x;
  p.ld = a.ld;
  p.rows = a.rows;
  p.cols = a.cols;
  p.row_amax = amax;
  p.col_amax = amax + a.rows;
  p.fmax = format_max(a.out_type);
  p.fmt = a.out_type;
  p.values = static_cast<uint8_t*>(a.values);
  p.values_t = static_cast<uint8_t*>(a.values_t);
  p.scales = a.scales;
  p.scales_t = a.scales_t;
  if (a.out_type == DType::int8) {
    quantize_row_pair_kernel<true><<<grid, kThreads, 0, stream>>>(p);
  } else {
    quantize_row_pair_kernel<false><<<grid, kThreads, 0, stream>>>(p);
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace lpbench::cuda
