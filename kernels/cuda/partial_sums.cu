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

// One or two sets of partial rows with the same columns: the first `chunks` blocks take set 0's
// 32-column chunks, the rest set 1's.
struct PartialSets {
  const float* partial[2];
  int64_t parts[2];
  float* out[2];
};

__global__ void __launch_bounds__(kSumColumns* kSumSplits)
    sum_partials_kernel(const PartialSets sets, int64_t cols, uint32_t chunks) {
  __shared__ float sums[kSumSplits][kSumColumns];
  wait_for_producer();  // the partial rows come from the kernel before this one
  // The set's fields by constant indices: indexed by a run-time value, the parameters were copied
  // to a stack frame first (48 bytes of local memory), and the norm backward's call ran 4 %
  // slower (docs/perf-log.md §44).
  const bool first = blockIdx.x < chunks;
  const float* partial = first ? sets.partial[0] : sets.partial[1];
  const int64_t parts = first ? sets.parts[0] : sets.parts[1];
  float* out = first ? sets.out[0] : sets.out[1];
  const int64_t col =
      static_cast<int64_t>(first ? blockIdx.x : blockIdx.x - chunks) * kSumColumns + threadIdx.x;
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

void launch_sums(const PartialSets& sets, int count, int64_t cols, cudaStream_t stream) {
  const auto chunks = static_cast<uint32_t>((cols + kSumColumns - 1) / kSumColumns);
  // Launched as its producer's dependent: the grid is in place when the producer's last block
  // leaves, rather than a launch gap and a ramp after it (docs/perf-log.md §43).
  launch_after_producer(sum_partials_kernel, dim3(chunks * count), dim3(kSumColumns, kSumSplits), 0,
                        stream, sets, cols, chunks);
}

}  // namespace

void sum_partial_rows(const float* partial, int64_t parts, int64_t cols, float* out,
                      cudaStream_t stream) {
  launch_sums(PartialSets{{partial, partial}, {parts, parts}, {out, out}}, 1, cols, stream);
}

void sum_partial_rows(const float* partial0, int64_t parts0, float* out0, const float* partial1,
                      int64_t parts1, float* out1, int64_t cols, cudaStream_t stream) {
  launch_sums(PartialSets{{partial0, partial1}, {parts0, parts1}, {out0, out1}}, 2, cols, stream);
}

}  // namespace lpbench::cuda
