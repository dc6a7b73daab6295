#include "workloads/levels/fallback_tally.h"

namespace lpbench::workloads {

void FallbackTally::absorb() {
  for (const auto& [key, count] : kernels::take_fallback_counts()) {
    counts_[key].blocks += count.blocks;
    counts_[key].fallback += count.fallback;
  }
}

std::vector<StepMetric> FallbackTally::take_metrics() {
  std::vector<StepMetric> metrics;
  for (const auto& [key, count] : counts_) {
    if (count.blocks == 0) continue;
    metrics.emplace_back("fallback." + key + ".share",
                         static_cast<double>(count.fallback) / static_cast<double>(count.blocks));
  }
  counts_.clear();
  return metrics;
}

}  // namespace lpbench::workloads
