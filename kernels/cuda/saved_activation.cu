// saved=int8's restore: 16 INT8 values a thread (one 16-byte load, two 16-byte stores of BF16),
// grid-strided; a block of 128 shares its scale across 8 threads. What torch's ops did in three
// passes with an FP32 copy of the tensor (docs/perf-log.md §21) in one read and one write.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/saved_activation.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 16;

__global__ void __launch_bounds__(kThreads) restore_kernel(const RestoreInt8Args a) {
  const int64_t per_row = a.cols / kPerThread;
  const int64_t blocks_per_row = (a.cols + 127) / 128;
  const int64_t total = a.rows * per_row;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < total;
       item += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = item / per_row;
    const int64_t col = (item % per_row) * kPerThread;
    const float scale = __ldg(a.scales + row * blocks_per_row + col / 128);
    const int4 packed = __ldg(reinterpret_cast<const int4*>(a.values + row * a.cols + col));
    const auto* q = reinterpret_cast<const int8_t*>(&packed);
    __nv_bfloat162 out[kPerThread / 2];
#pragma unroll
    for (int e = 0; e < kPerThread / 2; ++e) {
      out[e] = __halves2bfloat162(
          __float2bfloat16_rn(__fmul_rn(static_cast<float>(q[2 * e]), scale)),
          __float2bfloat16_rn(__fmul_rn(static_cast<float>(q[2 * e + 1]), scale)));
    }
    auto* dst = reinterpret_cast<int4*>(static_cast<__nv_bfloat16*>(a.out) + row * a.cols + col);
    dst[0] = *reinterpret_cast<const int4*>(&out[0]);
    dst[1] = *reinterpret_cast<const int4*>(&out[4]);
  }
}

}  // namespace

void check_int8_blocks(const void* values, const void* scales, int64_t cols, const char* who) {
  if (values == nullptr) return;
  LPBENCH_CUDA_REQUIRE(cols % kSavedBlock == 0,
                       std::string(who) + ": INT8 blocks need rows of a multiple of 128, got " +
                           std::to_string(cols));
  LPBENCH_CUDA_REQUIRE(scales != nullptr && reinterpret_cast<uintptr_t>(values) % 8 == 0 &&
                           reinterpret_cast<uintptr_t>(scales) % 4 == 0,
                       std::string(who) + ": INT8 blocks need their scales, values 8-byte aligned");
}

void restore_int8_blocks(const RestoreInt8Args& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(a.values != nullptr && a.scales != nullptr && a.out != nullptr,
                       "restore_int8_blocks: a pointer is null");
  LPBENCH_CUDA_REQUIRE(
      a.rows > 0 && a.cols > 0 && a.cols % kPerThread == 0,
      "restore_int8_blocks: cols must be a positive multiple of 16, got " + std::to_string(a.cols));
  for (const void* p : {static_cast<const void*>(a.values), static_cast<const void*>(a.out)}) {
    LPBENCH_CUDA_REQUIRE(reinterpret_cast<uintptr_t>(p) % 16 == 0,
                         "restore_int8_blocks: values and out must be 16-byte aligned");
  }
  const NvtxRange range("lpbench restore_int8_blocks");
  const int64_t items = a.rows * (a.cols / kPerThread);
  const int64_t blocks = std::min<int64_t>((items + kThreads - 1) / kThreads, 65535LL * 16);
  restore_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace lpbench::cuda
