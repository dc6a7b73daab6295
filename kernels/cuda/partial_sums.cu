#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/partial_sums.cuh"

namespace lpbench::cuda {

namespace {

__global__ void __launch_bounds__(kSumThreads)
    sum_partials_kernel(const PartialSets sets, int64_t cols, uint32_t chunks) {
  wait_for_producer();  // the partial rows come from the kernel before this one
  sum_partial_chunk(sets, cols, chunks, blockIdx.x, static_cast<int>(threadIdx.x));
}

}  // namespace

void sum_partial_rows(const PartialSets& sets, int count, int64_t cols, cudaStream_t stream) {
  const auto chunks = static_cast<uint32_t>((cols + kSumColumns - 1) / kSumColumns);
  // Launched as its producer's dependent: the grid is in place when the producer's last block
  // leaves, rather than a launch gap and a ramp after it (docs/perf-log.md §43).
  launch_after_producer(sum_partials_kernel, dim3(chunks * count), dim3(kSumThreads), 0, stream,
                        sets, cols, chunks);
}

void sum_partial_rows(const float* partial, int64_t parts, int64_t cols, float* out,
                      cudaStream_t stream) {
  sum_partial_rows(PartialSets{{partial, partial}, {parts, parts}, {out, out}}, 1, cols, stream);
}

}  // namespace lpbench::cuda
