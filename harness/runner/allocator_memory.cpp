#include "harness/runner/allocator_memory.h"

#include <ATen/Context.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <atomic>

namespace lpbench::runner {

namespace {

c10::CachingDeviceAllocator::DeviceStats stats(const c10::Device& device) {
  return c10::getDeviceAllocator(device.type())->getDeviceStats(device.index());
}

constexpr size_t kAggregate = 0;  // StatType::AGGREGATE: all pools together

// Counts what torch's CPU allocator hands out. Each block carries its size in a header in front
// of the data, so the data pointer is its own context, as torch's default allocator's is (code
// that takes the raw pointer and frees it through raw_deleter() keeps working), and the header's
// 64 bytes keep the default allocator's 64-byte alignment.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  static CountingCpuAllocator& install() {
    static CountingCpuAllocator* instance = [] {
      auto* counting = new CountingCpuAllocator(c10::GetDefaultCPUAllocator());
      // Above the default's priority (0), so that every later CPU allocation comes here; blocks
      // from before are freed through their own deleter.
      c10::SetCPUAllocator(counting, /*priority=*/1);
      return counting;
    }();
    return *instance;
  }

  c10::DataPtr allocate(size_t n) override {
    void* base = inner_->raw_allocate(n + kHeader);
    *static_cast<size_t*>(base) = n;
    void* data = static_cast<char*>(base) + kHeader;
    const int64_t now = current_.fetch_add(static_cast<int64_t>(n)) + static_cast<int64_t>(n);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return {data, data, &release, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  int64_t current() const { return current_.load(); }
  int64_t peak() const { return peak_.load(); }
  void reset_peak() { peak_.store(current_.load()); }

 private:
  static constexpr size_t kHeader = 64;
  explicit CountingCpuAllocator(c10::Allocator* inner) : inner_(inner) {}

  static void release(void* data) {
    CountingCpuAllocator& self = install();
    void* base = static_cast<char*>(data) - kHeader;
    self.current_.fetch_sub(static_cast<int64_t>(*static_cast<size_t*>(base)));
    self.inner_->raw_deallocate(base);
  }

  c10::Allocator* inner_;
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
};

}  // namespace

AllocatorMemory::AllocatorMemory(const c10::Device& device) : device_(device) {
  if (device_.is_cpu()) {
    CountingCpuAllocator::install();
  } else {
    // The caching allocator sizes its per-device tables when the runtime starts; asking it for
    // statistics earlier fails with "Invalid device argument".
    at::globalContext().lazyInitDevice(device_.type());
  }
}

int64_t AllocatorMemory::allocated_bytes() const {
  if (device_.is_cpu()) return CountingCpuAllocator::install().current();
  return stats(device_).allocated_bytes[kAggregate].current;
}

int64_t AllocatorMemory::peak_allocated_bytes() const {
  if (device_.is_cpu()) return CountingCpuAllocator::install().peak();
  return stats(device_).allocated_bytes[kAggregate].peak;
}

std::optional<int64_t> AllocatorMemory::peak_reserved_bytes() const {
  if (device_.is_cpu()) return std::nullopt;
  return stats(device_).reserved_bytes[kAggregate].peak;
}

int64_t AllocatorMemory::allocation_retries() const {
  if (device_.is_cpu()) return 0;
  return stats(device_).num_alloc_retries;
}

void AllocatorMemory::reset_peaks() const {
  if (device_.is_cpu()) {
    CountingCpuAllocator::install().reset_peak();
  } else {
    c10::getDeviceAllocator(device_.type())->resetPeakStats(device_.index());
  }
}

void AllocatorMemory::release_cached() const {
  if (!device_.is_cpu()) c10::getDeviceAllocator(device_.type())->emptyCache();
}

}  // namespace lpbench::runner
