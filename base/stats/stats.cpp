#include "base/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace lpbench::stats {

double percentile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return NAN;
  if (q < 0.0 || q > 1.0) throw std::invalid_argument("percentile outside [0, 1]");
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

Summary summarize(std::span<const double> values) {
  Summary s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) {
    s.median = s.p10 = s.p90 = s.mean = s.min = s.max = NAN;
    return s;
  }
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  s.median = percentile_sorted(sorted, 0.5);
  s.p10 = percentile_sorted(sorted, 0.1);
  s.p90 = percentile_sorted(sorted, 0.9);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.count);
  s.min = sorted.front();
  s.max = sorted.back();
  return s;
}

}  // namespace lpbench::stats
