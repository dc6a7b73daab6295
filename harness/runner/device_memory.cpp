#include "harness/runner/device_memory.h"

#include <ATen/Context.h>
#include <c10/core/CachingDeviceAllocator.h>

namespace lpbench::runner {

namespace {

c10::CachingDeviceAllocator::DeviceStats stats(const c10::Device& device) {
  return c10::getDeviceAllocator(device.type())->getDeviceStats(device.index());
}

constexpr size_t kAggregate = 0;  // StatType::AGGREGATE: all pools together

}  // namespace

DeviceMemory::DeviceMemory(const c10::Device& device) : device_(device) {
  // The caching allocator sizes its per-device tables when the runtime starts; asking it for
  // statistics earlier fails with "Invalid device argument".
  if (available()) at::globalContext().lazyInitDevice(device_.type());
}

int64_t DeviceMemory::allocated_bytes() const {
  return available() ? stats(device_).allocated_bytes[kAggregate].current : 0;
}

int64_t DeviceMemory::peak_allocated_bytes() const {
  return available() ? stats(device_).allocated_bytes[kAggregate].peak : 0;
}

int64_t DeviceMemory::peak_reserved_bytes() const {
  return available() ? stats(device_).reserved_bytes[kAggregate].peak : 0;
}

void DeviceMemory::reset_peaks() const {
  if (available()) c10::getDeviceAllocator(device_.type())->resetPeakStats(device_.index());
}

void DeviceMemory::release_cached() const {
  if (available()) c10::getDeviceAllocator(device_.type())->emptyCache();
}

}  // namespace lpbench::runner
