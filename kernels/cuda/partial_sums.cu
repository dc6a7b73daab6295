#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/partial_sums.cuh"

namespace lpbench::cuda {

namespace {

// 32 splits a column, not 8: at 8 the qwen3-8b layer's four calls (two of 4096 columns, two of
// 128 columns over 16 896 partial rows) took 0.18 ms of its step (docs/perf-log.md §35).
constexpr int kSumColumns = 32;
constexpr int kSumSplits = 32;

__global__ void __launch_bounds__(kSumColumns* kSumSplits)
    sum_partials_kernel(const float* partial, int64_t parts, int64_t cols, float* out) {
  __shared__ float sums[kSumSplits][kSumColumns];
  wait_for_producer();  // the partial rows come from the kernel before this one
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kSumColumns + threadIdx.x;
  float total = 0.0F;
  if (col < cols) {
    for (int64_t p = threadIdx.y; p < parts; p += kSumSplits)
      total += partial[p * cols + col];
  }
  sums[threadIdx.y][threadIdx.x] = total;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols) return;
  for (int i = 1; i < kSumSplits; ++i)
    total += sums[i][threadIdx.x];
  out[col] = total;
}

}  // namespace

void sum_partial_rows(const float* partial, int64_t parts, int64_t cols, float* out,
                      cudaStream_t stream) {
  // Launched as its producer's dependent: the grid is in place when the producer's last block
  // leaves, rather than a launch gap and a ramp after it (docs/perf-log.md §43).
  launch_after_producer(sum_partials_kernel,
                        dim3(static_cast<unsigned>((cols + kSumColumns - 1) / kSumColumns)),
                        dim3(kSumColumns, kSumSplits), 0, stream, partial, parts, cols, out);
}

}  // namespace lpbench::cuda
