#pragma once

#include <cstdint>
#include <span>

namespace lpbench::stats {

// Whether a candidate's samples sit higher or lower than a baseline's, with no assumption about
// their distribution (step times are skewed and have outliers): the Mann–Whitney U test, and
// the Hodges–Lehmann estimate of the shift (the median of all pairwise differences) with its
// distribution-free confidence interval.
struct ShiftEstimate {
  int64_t baseline_count = 0;
  int64_t candidate_count = 0;
  double p_value = 1.0;     // two-sided; normal approximation with tie and continuity correction
  double shift = 0.0;       // candidate − baseline, in the samples' unit
  double shift_low = 0.0;   // the (1 − alpha) confidence interval of the shift
  double shift_high = 0.0;  // (±infinity where the samples are too few to bound it)
};

// NaNs must be filtered out by the caller. Needs at least one sample on each side.
ShiftEstimate estimate_shift(std::span<const double> baseline, std::span<const double> candidate,
                             double alpha);

// The standard normal's upper quantile: z with P(Z > z) = p, for p in (0, 1).
double normal_upper_quantile(double p);

}  // namespace lpbench::stats
