#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace lpbench::cuda {

// Launch geometry of the grid-strided kernels (the norms, the q/k norm backward, SwiGLU, RoPE),
// whose blocks each walk many rows or vectors. What the runtime says about a kernel does not change
// while the process runs, so each answer is asked once per device and kept: these are called on
// every launch.

// The blocks of a grid-strided backward over `rows` rows, `rows_per_block` at a time, with
// `threads` threads a block: one wave (2048 threads an SM), fewer where the rows run out. Each
// block then walks several rows, and keeps one partial row per row slot.
int64_t one_wave_blocks(int64_t rows, int rows_per_block, int threads);

// The blocks of `kernel` (with `threads` threads and `smem_bytes` of dynamic shared memory a
// block) that the GPU runs at once, at most `bound` (one_wave_blocks, which sizes the workspace).
int64_t resident_blocks(const void* kernel, int threads, size_t smem_bytes, int64_t bound);

// A launch of `blocks` blocks of `threads` in clusters of `cluster` along x, for cudaLaunchKernelEx
// and the cluster occupancy query: the configuration points at its own attribute, so it is neither
// copied nor moved.
class ClusterLaunch {
 public:
  ClusterLaunch(int64_t blocks, int threads, size_t smem_bytes, int cluster, cudaStream_t stream);
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
  const cudaLaunchConfig_t& config() const { return config_; }

 private:
  cudaLaunchAttribute attribute_{};
  cudaLaunchConfig_t config_{};
};

// The clusters of `cluster` blocks of `kernel` (launched with a cluster dimension) that the GPU
// runs at once (cudaOccupancyMaxActiveClusters), at most `bound`.
int64_t resident_clusters(const void* kernel, int threads, size_t smem_bytes, int cluster,
                          int64_t bound);

// The grid of a kernel that keeps each thread on the same columns and walks it down the rows (the
// producers that report every row's and column's amax): `col_blocks` blocks across, and down
// the rows as few blocks as fill one wave of resident ones with the rest, each thread taking
// `rows_per_thread` of its block's rows `rows_per_step` apart. Fewer blocks down the rows mean
// fewer atomics a column, and one wave means no second, partial one.
struct LineGrid {
  int64_t col_blocks = 0;
  int64_t row_blocks = 0;
  int64_t rows_per_thread = 0;
};
LineGrid line_grid(const void* kernel, int threads, int64_t col_blocks, int64_t rows,
                   int rows_per_step);

// An attribute of the current device (cudaDeviceGetAttribute), asked once per device and kept.
int device_attribute(cudaDeviceAttr attribute);

// Lets `kernel` take `bytes` of dynamic shared memory a block (cudaFuncSetAttribute, once per
// device for the largest `bytes` asked).
void allow_dynamic_shared_memory(const void* kernel, size_t bytes);

}  // namespace lpbench::cuda
