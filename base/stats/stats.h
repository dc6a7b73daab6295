#pragma once

#include <cstdint>
#include <span>

namespace lpbench::stats {

// The statistics every timed series is reported with. The median is the figure quoted; p10 and
// p90 are its spread.
struct Summary {
  int64_t count = 0;
  double median = 0.0;
  double p10 = 0.0;
  double p90 = 0.0;
  double mean = 0.0;
  double min = 0.0;
  double max = 0.0;
};

// Percentiles by linear interpolation between closest ranks (numpy's default). NaNs must be
// filtered out by the caller. An empty series gives count 0 and NaN figures.
Summary summarize(std::span<const double> values);

// q in [0, 1] of a sorted series.
double percentile_sorted(std::span<const double> sorted, double q);

}  // namespace lpbench::stats
