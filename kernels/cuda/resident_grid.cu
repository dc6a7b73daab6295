#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/resident_grid.cuh"

namespace lpbench::cuda {

namespace {

int current_device() {
  int device = 0;
  LPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

std::mutex& answers_mutex() {
  static std::mutex m;
  return m;
}

int attribute_of(int device, cudaDeviceAttr attribute) {
  static std::map<std::pair<int, cudaDeviceAttr>, int> answers;
  const std::lock_guard<std::mutex> lock(answers_mutex());
  auto [it, fresh] = answers.try_emplace({device, attribute}, 0);
  if (fresh) LPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&it->second, attribute, device));
  return it->second;
}

int sm_count(int device) {
  return attribute_of(device, cudaDevAttrMultiProcessorCount);
}

}  // namespace

int device_attribute(cudaDeviceAttr attribute) {
  return attribute_of(current_device(), attribute);
}

int64_t one_wave_blocks(int64_t rows, int rows_per_block, int threads) {
  const int64_t needed = (rows + rows_per_block - 1) / rows_per_block;
  return std::min<int64_t>(needed,
                           int64_t{sm_count(current_device())} * std::max(1, 2048 / threads));
}

int64_t resident_blocks(const void* kernel, int threads, size_t smem_bytes, int64_t bound) {
  const int device = current_device();
  const int sms = sm_count(device);
  static std::map<std::tuple<int, const void*, int, size_t>, int> per_sm;
  int blocks = 0;
  {
    const std::lock_guard<std::mutex> lock(answers_mutex());
    auto [it, fresh] = per_sm.try_emplace({device, kernel, threads, smem_bytes}, 0);
    if (fresh) {
      LPBENCH_CUDA_CHECK(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&it->second, kernel, threads, smem_bytes));
    }
    blocks = it->second;
  }
  return std::max<int64_t>(1, std::min<int64_t>(bound, int64_t{sms} * blocks));
}

ClusterLaunch::ClusterLaunch(int64_t blocks, int threads, size_t smem_bytes, int cluster,
                             cudaStream_t stream) {
  attribute_.id = cudaLaunchAttributeClusterDimension;
  attribute_.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute_.val.clusterDim.y = 1;
  attribute_.val.clusterDim.z = 1;
  config_.gridDim = dim3(static_cast<unsigned>(blocks));
  config_.blockDim = dim3(static_cast<unsigned>(threads));
  config_.dynamicSmemBytes = smem_bytes;
  config_.stream = stream;
  config_.attrs = &attribute_;
  config_.numAttrs = 1;
}

int64_t resident_clusters(const void* kernel, int threads, size_t smem_bytes, int cluster,
                          int64_t bound) {
  const int device = current_device();
  static std::map<std::tuple<int, const void*, int, size_t, int>, int> per_device;
  int clusters = 0;
  {
    const std::lock_guard<std::mutex> lock(answers_mutex());
    auto [it, fresh] = per_device.try_emplace({device, kernel, threads, smem_bytes, cluster}, 0);
    if (fresh) {
      const ClusterLaunch one(cluster, threads, smem_bytes, cluster, nullptr);
      LPBENCH_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&it->second, kernel, &one.config()));
      LPBENCH_CUDA_REQUIRE(it->second > 0, "no cluster of " + std::to_string(cluster) +
                                               " blocks of " + std::to_string(threads) +
                                               " threads fits on this device");
    }
    clusters = it->second;
  }
  return std::max<int64_t>(1, std::min<int64_t>(bound, clusters));
}

LineGrid line_grid(const void* kernel, int threads, int64_t col_blocks, int64_t rows,
                   int rows_per_step) {
  const int64_t row_groups = (rows + rows_per_step - 1) / rows_per_step;
  const int64_t resident = resident_blocks(kernel, threads, 0, col_blocks * row_groups);
  const int64_t wanted_row_blocks = std::max<int64_t>(1, resident / col_blocks);
  LineGrid g;
  g.col_blocks = col_blocks;
  g.rows_per_thread = (row_groups + wanted_row_blocks - 1) / wanted_row_blocks;
  g.row_blocks = (row_groups + g.rows_per_thread - 1) / g.rows_per_thread;
  return g;
}

void allow_dynamic_shared_memory(const void* kernel, size_t bytes) {
  static std::map<std::pair<int, const void*>, size_t> allowed;
  const int device = current_device();
  const std::lock_guard<std::mutex> lock(answers_mutex());
  size_t& already = allowed[{device, kernel}];
  if (bytes <= already) return;
  LPBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(bytes)));
  already = bytes;
}

}  // namespace lpbench::cuda
