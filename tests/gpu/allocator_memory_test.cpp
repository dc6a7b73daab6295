// AllocatorMemory's count of the CUDA caching allocator's retries, which the step runner records
// per step (store::kAllocationRetriesMetric) and the report flags (¶): an allocation that does
// not fit beside the allocator's cached blocks under its memory limit makes it release its cache
// and retry, and the count grows by one; one that its cache serves counts nothing. Skipped where
// torch sees no GPU.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/runner/allocator_memory.h"

namespace lpbench::runner {
namespace {

TEST(AllocatorMemoryOnGpu, CountsTheRetriesOfAnAllocationThatNeededTheCacheReleased) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const c10::Device gpu(c10::kCUDA, 0);
  const AllocatorMemory memory(gpu);
  namespace allocator = c10::cuda::CUDACachingAllocator;
  allocator::emptyCache();
  const int64_t mib = 1 << 20;
  const auto reserved = allocator::getDeviceStats(0).reserved_bytes[0].current;
  const auto total = static_cast<double>(at::cuda::getDeviceProperties(0)->totalGlobalMem);
  // Room for what the allocator holds now and 1 GiB more.
  allocator::setMemoryFraction((static_cast<double>(reserved) + 1024.0 * mib) / total, 0);
  const auto options = torch::dtype(torch::kByte).device(torch::kCUDA);
  const int64_t before = memory.allocation_retries();
  { const at::Tensor a = torch::empty({600 * mib}, options); }  // freed into the cache
  { const at::Tensor b = torch::empty({500 * mib}, options); }  // served by the cached block
  EXPECT_EQ(memory.allocation_retries(), before);
  // 700 MiB beside the cached 600 exceed the limit: the cache is released and the call retried.
  { const at::Tensor c = torch::empty({700 * mib}, options); }
  EXPECT_EQ(memory.allocation_retries(), before + 1);
  allocator::setMemoryFraction(1.0, 0);
  allocator::emptyCache();
}

}  // namespace
}  // namespace lpbench::runner
