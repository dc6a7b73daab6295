// MemorySnapshot, which `lpbench run --memory-snapshot STEP` wraps around one step: the CUDA
// caching allocator's history over that step, each entry named by the lpbench range it happened
// in, saved with the allocator's state as torch's pickled snapshot. Skipped where torch sees no
// GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/timing/memory_snapshot.h"
#include "kernels/profiling/range.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lpbench::timing {
namespace {

TEST(MemorySnapshotOnGpu, SavesTheAllocationsOfTheStepNamedByTheirRange) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const testing::TempDir dir;
  const std::string path = dir / "step.memory.pickle";
  const auto options = torch::dtype(torch::kByte).device(torch::kCUDA);
  {
    MemorySnapshot snapshot(c10::Device(c10::kCUDA, 0));
    {
      const profiling::Range outer("layer", "layers.7");
      const profiling::Range inner("quantize", "snapshot-test operand");
      const at::Tensor t = torch::empty({3 << 20}, options);
    }
    snapshot.save(path);
  }
  const std::string bytes = testing::read_file(path);
  ASSERT_GT(bytes.size(), 2U);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x80) << "not a pickle";
  EXPECT_NE(bytes.find("device_traces"), std::string::npos);
  EXPECT_NE(bytes.find("segments"), std::string::npos);
  // The innermost range names the allocation; the outer one named nothing allocated.
  EXPECT_NE(bytes.find("quantize snapshot-test operand"), std::string::npos);
  EXPECT_EQ(bytes.find("layer layers.7"), std::string::npos);

  // Recording stopped with the save: a range afterwards pushes nothing onto the allocator.
  {
    const profiling::Range after("gemm", "after-the-snapshot");
    const at::Tensor t = torch::empty({1 << 20}, options);
  }
  const std::string again = dir / "again.memory.pickle";
  {
    MemorySnapshot snapshot(c10::Device(c10::kCUDA, 0));
    snapshot.save(again);
  }
  const std::string later = testing::read_file(again);
  EXPECT_EQ(later.find("after-the-snapshot"), std::string::npos);
  EXPECT_EQ(later.find("snapshot-test operand"), std::string::npos) << "history not cleared";
}

TEST(MemorySnapshot, IsRefusedOffTheGpu) {
  EXPECT_THROW(MemorySnapshot(c10::Device(c10::kCPU)), std::invalid_argument);
}

}  // namespace
}  // namespace lpbench::timing
