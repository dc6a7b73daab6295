// The block Hadamard rotation fused into quantization (quantize_hadamard.cuh).
//
// A CTA takes a tile of 64 operand rows × 256 operand columns, a warp eight of its rows, a lane
// eight consecutive columns of each. The transform of a row's block of b runs in FP32 as the
// reference's butterfly does, stage by stage with strides 1, 2, 4, …, b/2, each pair (lo, hi)
// becoming (lo + hi, lo − hi): strides below 8 inside a lane's registers, the others between
// lanes (lane XOR stride/8), then every value times 1/√b. The same additions in the same order
// give the same FP32 values as the reference, so the quantized bytes match it bit for bit.
//
// Loading the operand: where it is X, a lane reads its eight columns of a row as one 16-byte
// load, a warp 512 contiguous bytes. Where it is Xᵀ, a column of X is an operand row, so the CTA
// first copies the X tile [256 rows, 64 columns] into shared memory, 128 contiguous bytes a row,
// and each lane then reads eight X rows' 16-byte chunks: eight operand rows' values at eight of
// its columns. The chunk index is XOR-ed with (X row / 8) mod 8, so that the eight lanes of each
// 16-byte access phase meet eight different bank groups both when the tile is written (eight
// chunks of one X row) and when it is read (one chunk of eight X rows eight apart).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/quantize_hadamard.cuh"
#include "kernels/cuda/quantize_math.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerWarp = 8;
constexpr int kTileRows = kThreads / 32 * kRowsPerWarp;  // 64 operand rows
constexpr int kTileCols = 32 * 8;                        // 256 operand columns
constexpr int kChunks = kTileRows / 8;                   // 16-byte chunks of an X row: 8

struct Params {
  const __nv_bfloat16* x;
  int64_t ld;
  int64_t rows, cols;  // the operand's
  int block;
  float norm;
  DType fmt;
  float fmax;
  bool rowwise;
  uint32_t* amax;  // [1] or [rows]: folded by the first pass; read by the second
  uint8_t* values;
  float* scales;
};

__device__ __forceinline__ int swizzled_chunk(int x_row, int chunk) {
  return chunk ^ ((x_row >> 3) & (kChunks - 1));
}

// The lane's eight values of operand row k (0..7 of the warp's rows) from its eight loads. Not
// transposed, load k is that row's eight columns; transposed, load j is the chunk of X row
// (column) j holding the eight operand rows, of which row k is the k-th BF16.
template <bool kTransposed>
__device__ __forceinline__ void row_values(const uint4 (&raw)[8], int k, float (&f)[8]) {
  if constexpr (!kTransposed) {
    quant::Vec<__nv_bfloat16>::unpack(raw[k], f);
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint4& v = raw[j];
      const uint32_t w = (k >> 1) == 0 ? v.x : (k >> 1) == 1 ? v.y : (k >> 1) == 2 ? v.z : v.w;
      f[j] = __uint_as_float((k & 1) ? (w & 0xffff0000u) : (w << 16));
    }
  }
}

// The normalised Sylvester transform of each block of b along the row, eight values a lane.
__device__ __forceinline__ void rotate(float (&f)[8], int block, float norm, int lane) {
#pragma unroll
  for (int s = 1; s < 8; s <<= 1) {
    if (s < block) {
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        if ((e & s) == 0) {
          const float lo = f[e];
          const float hi = f[e + s];
          f[e] = __fadd_rn(lo, hi);
          f[e + s] = __fsub_rn(lo, hi);
        }
      }
    }
  }
  for (int s = 8; s < block; s <<= 1) {
    const int mask = s >> 3;
    // lo + hi in the lower lane, lo − hi in the upper one (where the other value is lo): both
    // are other + sign · mine rounded once, one FMA, since sign · mine is exact. A select between
    // an add and a subtract cost three instructions an element and left the kernel issue-bound.
    const float sign = (lane & mask) != 0 ? -1.0f : 1.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      f[e] = __fmaf_rn(sign, f[e], __shfl_xor_sync(0xffffffffu, f[e], mask));
  }
#pragma unroll
  for (int e = 0; e < 8; ++e)
    f[e] = __fmul_rn(f[e], norm);
}

// amax: the first pass, folding max |rotated value| per row or per tensor into p.amax. quantize:
// the second, quantizing by the scale of that amax. rotate: the rotated values as FP32, alone.
enum class Pass { amax, quantize, rotate };

template <bool kTransposed, Pass kPass, bool kInt8>
__global__ void __launch_bounds__(kThreads) hadamard_kernel(const Params p) {
  __shared__ __align__(16) uint4 tile[kTransposed ? kTileCols * kChunks : 1];
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTileRows + warp * kRowsPerWarp;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTileCols + lane * 8;
  uint4 raw[8];
  if constexpr (!kTransposed) {
#pragma unroll
    for (int k = 0; k < 8; ++k)
      raw[k] = r0 + k < p.rows && c < p.cols ? quant::load_vec(p.x + (r0 + k) * p.ld + c)
                                             : make_uint4(0, 0, 0, 0);
  } else {
    // X rows are operand columns, X columns operand rows.
    const int64_t xr0 = static_cast<int64_t>(blockIdx.x) * kTileCols;
    const int64_t xc0 = static_cast<int64_t>(blockIdx.y) * kTileRows;
#pragma unroll
    for (int i = 0; i < kTileCols * kChunks / kThreads; ++i) {
      const int row = i * (kThreads / kChunks) + static_cast<int>(threadIdx.x) / kChunks;
      const int chunk = static_cast<int>(threadIdx.x) % kChunks;
      const bool inside = xr0 + row < p.cols && xc0 + chunk * 8 < p.rows;
      tile[row * kChunks + swizzled_chunk(row, chunk)] =
          inside ? quant::load_vec(p.x + (xr0 + row) * p.ld + xc0 + chunk * 8)
                 : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int row = lane * 8 + j;
      raw[j] = tile[row * kChunks + swizzled_chunk(row, warp)];
    }
  }

  uint32_t tensor_max = 0;
  float inv = 1.0f;
  if (kPass == Pass::quantize && !p.rowwise) {
    float scale;
    quant::scale_of(*p.amax, p.fmax, &scale, &inv);
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) *p.scales = scale;
  }
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int64_t r = r0 + k;
    float f[8];
    row_values<kTransposed>(raw, k, f);
    rotate(f, p.block, p.norm, lane);
    if constexpr (kPass == Pass::amax) {
      uint32_t m = 0;
#pragma unroll
      for (int e = 0; e < 8; ++e)
        m = max(m, quant::abs_bits(f[e]));
      if (p.rowwise) {
        m = __reduce_max_sync(0xffffffffu, m);
        if (lane == 0 && r < p.rows && m != 0) atomicMax(p.amax + r, m);
      } else {
        tensor_max = max(tensor_max, m);
      }
    } else if constexpr (kPass == Pass::rotate) {
      if (r < p.rows && c < p.cols) {
        float4* out =
            reinterpret_cast<float4*>(reinterpret_cast<float*>(p.values) + r * p.cols + c);
        out[0] = make_float4(f[0], f[1], f[2], f[3]);
        out[1] = make_float4(f[4], f[5], f[6], f[7]);
      }
    } else {
      if (r >= p.rows) continue;
      float row_inv = inv;
      if (p.rowwise) {
        float scale;
        quant::scale_of(p.amax[r], p.fmax, &scale, &row_inv);
        if (blockIdx.x == 0 && lane == 0) p.scales[r] = scale;
      }
      if (c >= p.cols) continue;
      const DType out = kInt8 ? DType::int8 : p.fmt;
#pragma unroll
      for (int e = 0; e < 8; ++e)
        f[e] = quant::scaled(f[e], row_inv);
      *reinterpret_cast<uint2*>(p.values + r * p.cols + c) = make_uint2(
          quant::pack4(f[0], f[1], f[2], f[3], out), quant::pack4(f[4], f[5], f[6], f[7], out));
    }
  }
  if constexpr (kPass == Pass::amax) {
    if (!p.rowwise) report_amax(p.amax, tensor_max);
  }
}

}  // namespace

bool hadamard_kernel_applies(const HadamardQuantizeArgs& a) {
  const int64_t out_rows = a.transpose ? a.cols : a.rows;
  const int64_t out_cols = a.transpose ? a.rows : a.cols;
  return a.block >= 2 && a.block <= kHadamardMaxBlock && (a.block & (a.block - 1)) == 0 &&
         out_cols % a.block == 0 && out_rows % 8 == 0 && out_cols % 8 == 0 && a.ld % 8 == 0 &&
         a.ld >= a.cols && (out_rows + kTileRows - 1) / kTileRows <= 65535 &&
         quant::aligned(a.x, 16) && quant::aligned(a.values, a.out_type == DType::fp32 ? 16 : 8) &&
         a.out_type != DType::bf16 && a.out_type != DType::int32;
}

size_t hadamard_workspace_bytes(const HadamardQuantizeArgs& a) {
  if (a.out_type == DType::fp32) return 0;
  return static_cast<size_t>(a.rowwise ? (a.transpose ? a.cols : a.rows) : 1) * sizeof(uint32_t);
}

float hadamard_norm(int64_t block) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(block)));
}

namespace {

template <bool kTransposed>
void launch_passes(const Params& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.cols + kTileCols - 1) / kTileCols),
                  static_cast<unsigned>((p.rows + kTileRows - 1) / kTileRows));
  if (p.fmt == DType::fp32) {
    hadamard_kernel<kTransposed, Pass::rotate, false><<<grid, kThreads, 0, stream>>>(p);
    LPBENCH_CUDA_CHECK_LAUNCH();
    return;
  }
  hadamard_kernel<kTransposed, Pass::amax, true><<<grid, kThreads, 0, stream>>>(p);
  LPBENCH_CUDA_CHECK_LAUNCH();
  if (p.fmt == DType::int8) {
    hadamard_kernel<kTransposed, Pass::quantize, true><<<grid, kThreads, 0, stream>>>(p);
  } else {
    hadamard_kernel<kTransposed, Pass::quantize, false><<<grid, kThreads, 0, stream>>>(p);
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace

void quantize_hadamard(const HadamardQuantizeArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(hadamard_kernel_applies(a),
                       "the fused Hadamard quantization does not apply to these arguments");
  const bool rotate_only = a.out_type == DType::fp32;
  LPBENCH_CUDA_REQUIRE(rotate_only || (a.workspace != nullptr && a.scales != nullptr),
                       "needs scales and a workspace of hadamard_workspace_bytes()");
  auto* amax = static_cast<uint32_t*>(a.workspace);
  if (!rotate_only) {
    LPBENCH_CUDA_CHECK(cudaMemsetAsync(amax, 0, hadamard_workspace_bytes(a), stream));
  }
  Params p{};
  p.x = static_cast<const __nv_bfloat16*>(a.x);
  p.ld = a.ld;
  p.rows = a.transpose ? a.cols : a.rows;
  p.cols = a.transpose ? a.rows : a.cols;
  p.block = static_cast<int>(a.block);
  p.norm = hadamard_norm(a.block);
  p.fmt = a.out_type;
  p.fmax = rotate_only ? 0.0f : format_max(a.out_type);
  p.rowwise = a.rowwise;
  p.amax = amax;
  p.values = static_cast<uint8_t*>(a.values);
  p.scales = a.scales;
  if (a.transpose) {
    launch_passes<true>(p, stream);
  } else {
    launch_passes<false>(p, stream);
  }
}

}  // namespace lpbench::cuda
