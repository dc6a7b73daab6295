#pragma once

#include <optional>
#include <string>

#include "reports/run_summary.h"

namespace lpbench::reports {

// MEASURE.md's throughput figures for one run, at its median step time.
struct Throughput {
  std::optional<double> tflops;        // model FLOPs per step / median step time
  std::optional<double> mfu_pct;       // tflops / the GPU's dense BF16 peak
  std::optional<double> roofline_pct;  // ideal time / median step time (estimate)
  std::string note;                    // why a figure is missing
};

// The ideal time counts each matrix product at the peak of the precision it ran in, plus an
// estimate of the bytes everything else must move (activations written in forward and read in
// backward, AdamW's 28 bytes per parameter) over the memory bandwidth.
Throughput throughput(const RunSummary& run);

}  // namespace lpbench::reports
