#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/kernel_bench/case_table.h"
#include "harness/kernel_bench/validation.h"

// One case made ready to time: its operands drawn into several buffer sets (rotated so that the
// timed calls read from memory, not from L2), its result validated, its backend named.
namespace lpbench::kernel_bench {

struct DeviceInfo {
  torch::Device device{torch::kCPU};
  std::optional<std::string> gpu_name;
  std::optional<int64_t> l2_bytes;  // the GPU's L2 cache; none on the CPU
  double memory_bytes = 0.0;        // what the device can hold (RAM on the CPU)
  bool fp8 = false;                 // FP8 tensor cores (compute capability 8.9 or newer)
  std::string fp8_missing;          // why not, where not
};

DeviceInfo device_info(const torch::Device& device);

inline constexpr int64_t kCpuBufferSets = 2;  // a CPU has no L2 to defeat that matters here
inline constexpr int64_t kMaxBufferSets = 64;

// Sets so that together they hold at least twice the L2 (at least 2); `forced` > 0 wins.
int64_t buffer_sets_for(const KernelCase& c, const DeviceInfo& device, int64_t forced);

// Why the case cannot run on this device at all (it is then skipped, never timed), or nothing.
std::optional<std::string> unsupported_reason(const KernelCase& c, const DeviceInfo& device,
                                              int64_t sets);

class PreparedCase {
 public:
  // Draws the operands (seeded by the case's name, so every recipe of a shape sees the same
  // values), runs the case once on the first set and validates that result. Exceptions (out of
  // memory, an operation the backend refuses) propagate to the caller.
  PreparedCase(const KernelCase& c, const DeviceInfo& device, int64_t sets, uint64_t seed);

  // One call of the timed work on each buffer set in turn (queued; not waited for).
  void run_pass();
  int64_t sets() const { return static_cast<int64_t>(sets_.size()); }
  const Check& check() const { return check_; }
  const std::string& backend() const { return backend_; }

 private:
  struct Set {
    at::Tensor lhs_source, rhs_source;  // BF16, in the layout training holds them
    kernels::GemmOperand lhs, rhs;      // prepared (prequantized variant and bf16)
  };
  at::Tensor run_once(const Set& set, kernels::GemmOperand* lhs_used = nullptr,
                      kernels::GemmOperand* rhs_used = nullptr) const;

  const KernelCase& case_;
  torch::Device device_;
  std::vector<Set> sets_;
  Check check_;
  std::string backend_;
};

}  // namespace lpbench::kernel_bench
