#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/torch/gemm_stats.h"
#include "workloads/levels/workload.h"

namespace lpbench::workloads {

// int8-fallback's outlier blocks, per layer and GEMM, over the steps since the last report.
// A workload absorbs the GEMMs' counts right after each of its own steps, so the runs of a sweep
// (which share the process) never mix their counts.
class FallbackTally {
 public:
  void absorb();
  // "fallback.<module>.<gemm>.share" per layer and GEMM; resets the tally.
  std::vector<StepMetric> take_metrics();

 private:
  std::map<std::string, kernels::BlockCount> counts_;
};

}  // namespace lpbench::workloads
