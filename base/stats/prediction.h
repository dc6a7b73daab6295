#pragma once

#include <optional>
#include <span>

namespace lpbench::stats {

// Where one more value drawn like `values` falls with probability 1 − alpha, two-sided: the
// Student-t prediction interval mean ± t(1 − alpha/2, n − 1) · sd · √(1 + 1/n). This is what a
// night judged against the nights before it needs: with three baseline nights it is wide (t is
// 9.9 at alpha 0.01), because three nights say little about how much nights vary, and it narrows
// as nights accumulate. Needs two finite values or more; identical values give a zero width.
struct Interval {
  double low = 0.0;
  double high = 0.0;
};
std::optional<Interval> prediction_interval(std::span<const double> values, double alpha);

// The p-quantile of Student's t with `dof` degrees of freedom (p in (0, 1), dof > 0).
double student_t_quantile(double p, double dof);

}  // namespace lpbench::stats
