// The wgmma launcher's timed config choice: which of the candidates ran fastest on the problem's
// own operands, remembered per device and problem.
#include "kernels/cuda/wgmma_choice.h"

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cuda/check.cuh"

namespace lpbench::cuda {

namespace {

std::atomic<WgmmaChoice> g_choice{WgmmaChoice::timed};

using Key = std::tuple<int, int64_t, int64_t, int64_t, int, int, bool, bool>;

Key key_of(int device, const WgmmaProblem& p) {
  return {device, p.m,       p.n, p.k, static_cast<int>(p.scaling), static_cast<int>(p.out),
          p.bias, p.column_b};
}

std::mutex g_mutex;
std::map<Key, WgmmaConfig>& chosen() {
  static std::map<Key, WgmmaConfig> map;
  return map;
}

// Three launches back to back: enough that one launch's start-up is not the figure, few enough
// that a step's first call of a shape costs a few milliseconds at most.
constexpr int kTimedLaunches = 3;

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    LPBENCH_CUDA_CHECK(cudaEventCreate(&start));
    LPBENCH_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~Events() {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
};

}  // namespace

void set_wgmma_choice(WgmmaChoice choice) {
  g_choice.store(choice);
}

WgmmaChoice wgmma_choice() {
  return g_choice.load();
}

std::optional<WgmmaConfig> timed_wgmma_config(int device, const WgmmaProblem& problem) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = chosen().find(key_of(device, problem));
  if (it == chosen().end()) return std::nullopt;
  return it->second;
}

WgmmaConfig time_wgmma_candidates(int device, const WgmmaProblem& problem,
                                  const std::vector<WgmmaConfig>& candidates, cudaStream_t stream,
                                  const std::function<void(const WgmmaConfig&)>& launch) {
  LPBENCH_CUDA_REQUIRE(!candidates.empty(), "no wgmma config to time");
  // One timing at a time: two threads timing on one device would time each other.
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto found = chosen().find(key_of(device, problem));
  if (found != chosen().end()) return found->second;
  const Events events;
  WgmmaConfig best = candidates.front();
  float best_ms = 0.0f;
  for (size_t i = 0; i < candidates.size(); ++i) {
    launch(candidates[i]);
    LPBENCH_CUDA_CHECK(cudaEventRecord(events.start, stream));
    for (int r = 0; r < kTimedLaunches; ++r)
      launch(candidates[i]);
    LPBENCH_CUDA_CHECK(cudaEventRecord(events.stop, stream));
    LPBENCH_CUDA_CHECK(cudaEventSynchronize(events.stop));
    float ms = 0.0f;
    LPBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start, events.stop));
    if (i == 0 || ms < best_ms) {
      best = candidates[i];
      best_ms = ms;
    }
  }
  chosen()[key_of(device, problem)] = best;
  return best;
}

}  // namespace lpbench::cuda
