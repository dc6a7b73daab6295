// Xᵀ in 1 × kb blocks from one read of BF16 X [rows, cols], with the numerics of
// kernels/reference/quantize.cpp bit for bit (see quantize_columns.cuh).
//
// Before this, these blocks took the general path: an amax kernel over the column runs, then the
// tile kernel applying an inverse scale looked up for every value. At k-block=512 the llama2-7b
// layer step spent 0.34 ms in the one and 1.10 ms in the other, against ~0.3 ms at the copy rate
// for the bytes (docs/perf-log.md §27, §28).
//
// A CTA of 256 threads takes rows r0..r0+kb-1 (one block along Xᵀ's rows) and C = 32 (or 16)
// columns c0..c0+C-1 of X. Thread t always loads columns c0 + 8·(t % (C/8)) .. +7, in rows
// t / (C/8) + (2048/C)·i, so its 8 column maxima accumulate in registers while its loads are
// held (kb·C/2048 of them: 64 registers at kb = 1024, C = 32). The warps' maxima meet in shared
// memory, each column gets its scale, and every held vector is quantized with its 8 columns'
// inverses. The bytes go into a shared tile laid out as Xᵀ ([C][kb + 4]: the 4-byte pad puts a
// warp's byte stores of one column e in banks 8·(t % (C/8)) + e + r / 4, distinct words), from
// which each warp writes whole rows of Xᵀ, 128 contiguous bytes a store instruction.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdlib>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/quantize_byte_tile.cuh"
#include "kernels/cuda/quantize_columns.cuh"
#include "kernels/cuda/quantize_math.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

struct ColumnsParams {
  const __nv_bfloat16* x;
  int64_t ld;
  int64_t rows, cols;  // of X
  int64_t nbc;         // blocks per row of Xᵀ: ceil(rows / kb)
  DType fmt;
  float fmax;
  bool vec_out;     // 4-byte stores into Xᵀ (aligned base, rows % 4 == 0)
  uint8_t* values;  // Xᵀ [cols, rows]
  float* scales;    // [cols, nbc]
};

// kCols: the columns of X a CTA holds (rows of Xᵀ it writes), 16 or 32.
template <int kKb, int kCols, bool kInt8>
__global__ void __launch_bounds__(kThreads, 2) quantize_columns_kernel(const ColumnsParams p) {
  constexpr int kVecsPerRow = kCols / 8;                // 16-byte loads across a row of the strip
  constexpr int kRowsPerLoad = kThreads / kVecsPerRow;  // 64 or 128
  constexpr int kLoads = kKb / kRowsPerLoad;
  constexpr int kStride = kKb + 4;  // bytes a row of the byte tile (one column of X)
  __shared__ __align__(16) uint8_t tile[kCols * kStride];
  __shared__ uint32_t partial[kWarps][kCols];
  __shared__ float col_inv[kCols];
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kKb;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kCols;
  const int col = (tid % kVecsPerRow) * 8;
  const int row = tid / kVecsPerRow;
  // cols % 8 == 0: a vector lies wholly inside X or wholly past its last column.
  const bool col_in = c0 + col < p.cols;

  uint4 raw[kLoads];
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int64_t gi = r0 + row + i * kRowsPerLoad;
    raw[i] = col_in && gi < p.rows ? quant::load_vec(p.x + gi * p.ld + c0 + col)
                                   : make_uint4(0, 0, 0, 0);
  }
  uint32_t m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    float f[8];
    quant::Vec<__nv_bfloat16>::unpack(raw[i], f);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      m[e] = max(m[e], quant::abs_bits(f[e]));
  }
  // Lanes l, l ^ 4, l ^ 8, ... hold the same columns in other rows.
#pragma unroll
  for (int off = kVecsPerRow; off < 32; off <<= 1) {
#pragma unroll
    for (int e = 0; e < 8; ++e)
      m[e] = max(m[e], __shfl_xor_sync(0xffffffffu, m[e], off));
  }
  if (lane < kVecsPerRow) {
#pragma unroll
    for (int e = 0; e < 8; ++e)
      partial[warp][col + e] = m[e];
  }
  __syncthreads();
  if (tid < kCols) {
    uint32_t a = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      a = max(a, partial[w][tid]);
    float scale;
    float inv;
    quant::scale_of(a, p.fmax, &scale, &inv);
    col_inv[tid] = inv;
    if (c0 + tid < p.cols) p.scales[(c0 + tid) * p.nbc + blockIdx.y] = scale;
  }
  __syncthreads();

  float inv[8];
#pragma unroll
  for (int e = 0; e < 8; ++e)
    inv[e] = col_inv[col + e];
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const uint2 q = byte_tile::quantize8<kInt8>(raw[i], inv, p.fmt);
    const int r = row + i * kRowsPerLoad;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const uint32_t word = e < 4 ? q.x : q.y;
      tile[(col + e) * kStride + r] = static_cast<uint8_t>(word >> (8 * (e & 3)));
    }
  }
  __syncthreads();

  // Warp w writes rows c0 + w, c0 + w + 8, ... of Xᵀ, 4 bytes a lane, 128 a store.
#pragma unroll
  for (int k = 0; k < kCols / kWarps; ++k) {
    const int c = warp + k * kWarps;
    if (c0 + c >= p.cols) break;  // warp-uniform; later c are larger
    uint8_t* out = p.values + (c0 + c) * p.rows + r0;
    const uint32_t* src = reinterpret_cast<const uint32_t*>(tile + c * kStride);
#pragma unroll
    for (int j = lane; j < kKb / 4; j += 32) {
      const int64_t gr = r0 + 4 * j;
      if (gr >= p.rows) break;
      const uint32_t word = src[j];
      if (p.vec_out && gr + 4 <= p.rows) {
        *reinterpret_cast<uint32_t*>(out + 4 * j) = word;
      } else {
        for (int e = 0; e < 4 && gr + e < p.rows; ++e)
          out[4 * j + e] = static_cast<uint8_t>(word >> (8 * e));
      }
    }
  }
}

template <int kKb, int kCols>
void launch(const ColumnsParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.cols + kCols - 1) / kCols),
                  static_cast<unsigned>(p.nbc));
  if (p.fmt == DType::int8) {
    quantize_columns_kernel<kKb, kCols, true><<<grid, kThreads, 0, stream>>>(p);
  } else {
    quantize_columns_kernel<kKb, kCols, false><<<grid, kThreads, 0, stream>>>(p);
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
}

// The CTA's width: 32 columns (64-byte row segments), where a thread holds kb / 64 loads of 16
// bytes, at kb = 1024 16 loads and 128 registers, two CTAs an SM; or 16 columns, half the loads
// a thread (docs/perf-log.md §28 measured both). LPBENCH_QUANTIZE_COLUMNS=16|32 sets it for
// every kb (measurement only).
int columns_width(int64_t kb) {
  static const int forced = [] {
    const char* v = std::getenv("LPBENCH_QUANTIZE_COLUMNS");
    return v == nullptr ? 0 : std::atoi(v);
  }();
  if (forced == 16 || forced == 32) return forced;
  return kb == 1024 ? 16 : 32;
}

}  // namespace

bool columns_kernel_applies(const QuantizeArgs& a) {
  const bool kb = a.block_cols == 256 || a.block_cols == 512 || a.block_cols == 1024;
  return a.transpose && a.block_rows == 1 && kb && a.x_type == DType::bf16 &&
         a.values_t == nullptr && !a.copy_rowwise && !a.stochastic && !a.delayed &&
         a.amax == nullptr && a.amax_seen == nullptr && a.cols % 8 == 0 &&
         quant::aligned(a.x, 16) && a.ld % 8 == 0 &&
         (a.rows + a.block_cols - 1) / a.block_cols <= 65535;
}

void quantize_columns(const QuantizeArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(columns_kernel_applies(a), "the columns kernel does not apply");
  ColumnsParams p{};
  p.x = static_cast<const __nv_bfloat16*>(a.x);
  p.ld = a.ld;
  p.rows = a.rows;
  p.cols = a.cols;
  p.nbc = (a.rows + a.block_cols - 1) / a.block_cols;
  p.fmt = a.out_type;
  p.fmax = format_max(a.out_type);
  p.vec_out = quant::aligned(a.values, 4) && a.rows % 4 == 0;
  p.values = static_cast<uint8_t*>(a.values);
  p.scales = a.scales;
  const bool narrow = columns_width(a.block_cols) == 16;
  switch (a.block_cols) {
    case 256:
      narrow ? launch<256, 16>(p, stream) : launch<256, 32>(p, stream);
      break;
    case 512:
      narrow ? launch<512, 16>(p, stream) : launch<512, 32>(p, stream);
      break;
    default:
      narrow ? launch<1024, 16>(p, stream) : launch<1024, 32>(p, stream);
      break;
  }
}

}  // namespace lpbench::cuda
