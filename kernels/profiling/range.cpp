#include "kernels/profiling/range.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>

#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define LPBENCH_HAVE_NVTX 1
#endif

#ifdef LPBENCH_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda/check.cuh"
#endif

namespace lpbench::profiling {

namespace {

#ifdef LPBENCH_HAVE_NVTX
nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t handle = nvtxDomainCreateA("lpbench");
  return handle;
}
#endif

using Clock = std::chrono::steady_clock;

// One timed range: events on the device, or host times on the CPU.
struct Record {
  std::string key;
#ifdef LPBENCH_CUDA_GLUE
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
#endif
  Clock::time_point host_start, host_stop;
};

struct Timing {
  std::mutex mutex;
  bool enabled = false;
  c10::Device device{c10::kCPU};
  std::vector<Record> records;
#ifdef LPBENCH_CUDA_GLUE
  std::vector<cudaEvent_t> free_events;  // reused: creating events costs more than recording
  cudaEvent_t event() {
    if (!free_events.empty()) {
      cudaEvent_t e = free_events.back();
      free_events.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    LPBENCH_CUDA_CHECK(cudaEventCreate(&e));
    return e;
  }
  void record(cudaEvent_t e) const {
    LPBENCH_CUDA_CHECK(
        cudaEventRecord(e, c10::cuda::getCurrentCUDAStream(device.index()).stream()));
  }
#endif
};

Timing& timing() {
  static Timing t;
  return t;
}

std::atomic<bool> allocator_naming{false};

std::string range_name(std::string_view key, std::string_view detail) {
  std::string name(key);
  if (!detail.empty()) name += " " + std::string(detail);
  return name;
}

void release(Timing& t, Record& r) {
#ifdef LPBENCH_CUDA_GLUE
  if (r.start != nullptr) t.free_events.push_back(r.start);
  if (r.stop != nullptr) t.free_events.push_back(r.stop);
#else
  (void)t;
  (void)r;
#endif
}

}  // namespace

Range::Range(std::string_view key, std::string_view detail) {
#ifdef LPBENCH_TORCH_CUDA
  if (allocator_naming.load(std::memory_order_relaxed)) {
    std::string name = range_name(key, detail);
    c10::cuda::CUDACachingAllocator::pushCompileContext(name);
    names_allocations_ = true;
  }
#endif
#ifdef LPBENCH_HAVE_NVTX
  const std::string message = range_name(key, detail);
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = message.c_str();
  nvtxDomainRangePushEx(domain(), &attributes);
#else
  (void)detail;
#endif
  Timing& t = timing();
  if (!t.enabled) return;
  std::lock_guard<std::mutex> lock(t.mutex);
  Record r;
  r.key = std::string(key);
#ifdef LPBENCH_CUDA_GLUE
  if (t.device.is_cuda()) {
    r.start = t.event();
    r.stop = t.event();
    t.record(r.start);
  }
#endif
  r.host_start = Clock::now();
  slot_ = static_cast<int64_t>(t.records.size());
  t.records.push_back(std::move(r));
}

Range::~Range() {
  Timing& t = timing();
  if (slot_ >= 0) {
    std::lock_guard<std::mutex> lock(t.mutex);
    if (slot_ < static_cast<int64_t>(t.records.size())) {
      Record& r = t.records[static_cast<size_t>(slot_)];
#ifdef LPBENCH_CUDA_GLUE
      if (r.stop != nullptr) t.record(r.stop);
#endif
      r.host_stop = Clock::now();
    }
  }
#ifdef LPBENCH_HAVE_NVTX
  nvtxDomainRangePop(domain());
#endif
#ifdef LPBENCH_TORCH_CUDA
  if (names_allocations_) c10::cuda::CUDACachingAllocator::popCompileContext();
#endif
}

void set_region_timing(bool enabled, const c10::Device& device) {
  Timing& t = timing();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.enabled = enabled;
  t.device = device;
}

bool region_timing() {
  return timing().enabled;
}

void set_allocator_naming(bool enabled) {
  allocator_naming.store(enabled, std::memory_order_relaxed);
}

std::vector<RegionTime> take_region_times() {
  Timing& t = timing();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::vector<RegionTime> out;
  std::map<std::string, size_t> index;
  for (Record& r : t.records) {
    double ms = std::chrono::duration<double, std::milli>(r.host_stop - r.host_start).count();
#ifdef LPBENCH_CUDA_GLUE
    if (r.stop != nullptr) {
      float elapsed = 0.0F;
      LPBENCH_CUDA_CHECK(cudaEventSynchronize(r.stop));
      LPBENCH_CUDA_CHECK(cudaEventElapsedTime(&elapsed, r.start, r.stop));
      ms = elapsed;
    }
#endif
    auto [it, inserted] = index.emplace(r.key, out.size());
    if (inserted) out.push_back({r.key, 0, 0.0});
    out[it->second].calls += 1;
    out[it->second].total_ms += ms;
    release(t, r);
  }
  t.records.clear();
  return out;
}

void discard_region_times() {
  Timing& t = timing();
  std::lock_guard<std::mutex> lock(t.mutex);
#ifdef LPBENCH_CUDA_GLUE
  for (Record& r : t.records) {
    if (r.stop != nullptr) cudaEventSynchronize(r.stop);
    release(t, r);
  }
#endif
  t.records.clear();
}

}  // namespace lpbench::profiling
