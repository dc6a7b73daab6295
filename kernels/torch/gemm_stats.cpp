#include "kernels/torch/gemm_stats.h"

#include <mutex>

namespace lpbench::kernels {

namespace {

std::mutex& counts_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, BlockCount>& counts() {
  static std::map<std::string, BlockCount> map;
  return map;
}

}  // namespace

void record_fallback(std::string_view module, GemmKind kind, int64_t fallback, int64_t blocks) {
  std::lock_guard<std::mutex> lock(counts_mutex());
  BlockCount& c =
      counts()[std::string(module.empty() ? "?" : module) + "." + std::string(to_string(kind))];
  c.blocks += blocks;
  c.fallback += fallback;
}

std::map<std::string, BlockCount> take_fallback_counts() {
  std::lock_guard<std::mutex> lock(counts_mutex());
  std::map<std::string, BlockCount> taken;
  taken.swap(counts());
  return taken;
}

}  // namespace lpbench::kernels
