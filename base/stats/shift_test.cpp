#include "base/stats/shift_test.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace lpbench::stats {

namespace {

// The pairwise differences grow as n·m; beyond this many samples a side is thinned to evenly
// spaced order statistics, which keeps its distribution's shape (a year of nightly runs of 200
// steps would otherwise need gigabytes). The U test itself always uses every sample.
constexpr size_t kMaxPairwisePerSide = 2000;

std::vector<double> sorted_copy(std::span<const double> values) {
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

std::vector<double> thinned(const std::vector<double>& sorted) {
  if (sorted.size() <= kMaxPairwisePerSide) return sorted;
  std::vector<double> out(kMaxPairwisePerSide);
  for (size_t i = 0; i < kMaxPairwisePerSide; ++i)
    out[i] = sorted[i * (sorted.size() - 1) / (kMaxPairwisePerSide - 1)];
  return out;
}

// Two-sided p-value of the Mann–Whitney U test, from the normal approximation with the variance
// corrected for ties and a continuity correction of one half.
double mann_whitney_p(const std::vector<double>& baseline, const std::vector<double>& candidate) {
  struct Item {
    double value;
    bool candidate;
  };
  std::vector<Item> all;
  all.reserve(baseline.size() + candidate.size());
  for (double v : baseline)
    all.push_back({v, false});
  for (double v : candidate)
    all.push_back({v, true});
  std::sort(all.begin(), all.end(), [](const Item& a, const Item& b) { return a.value < b.value; });

  const double n = static_cast<double>(baseline.size());
  const double m = static_cast<double>(candidate.size());
  const double total = n + m;
  double candidate_rank_sum = 0.0;
  double tie_term = 0.0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].value == all[i].value)
      ++j;
    const double average_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1 … j
    for (size_t k = i; k < j; ++k) {
      if (all[k].candidate) candidate_rank_sum += average_rank;
    }
    const double tied = static_cast<double>(j - i);
    tie_term += tied * tied * tied - tied;
    i = j;
  }
  const double u = candidate_rank_sum - m * (m + 1.0) / 2.0;
  const double variance = n * m / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
  if (!(variance > 0.0)) return 1.0;  // every value tied: no evidence either way
  const double z = std::max(0.0, std::abs(u - n * m / 2.0) - 0.5) / std::sqrt(variance);
  return std::erfc(z / std::sqrt(2.0));
}

}  // namespace

double normal_upper_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) throw std::invalid_argument("normal_upper_quantile: p not in (0, 1)");
  // Bisection on the upper tail, which is monotone: 200 halvings of [-40, 40] reach double
  // precision, and this is called once per comparison.
  double low = -40.0;
  double high = 40.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (low + high);
    if (0.5 * std::erfc(mid / std::sqrt(2.0)) > p) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return 0.5 * (low + high);
}

ShiftEstimate estimate_shift(std::span<const double> baseline, std::span<const double> candidate,
                             double alpha) {
  if (baseline.empty() || candidate.empty()) {
    throw std::invalid_argument("estimate_shift needs at least one sample on each side");
  }
  const std::vector<double> b = sorted_copy(baseline);
  const std::vector<double> c = sorted_copy(candidate);
  ShiftEstimate e;
  e.baseline_count = static_cast<int64_t>(b.size());
  e.candidate_count = static_cast<int64_t>(c.size());
  e.p_value = mann_whitney_p(b, c);

  const std::vector<double> bt = thinned(b);
  const std::vector<double> ct = thinned(c);
  std::vector<double> differences;
  differences.reserve(bt.size() * ct.size());
  for (double y : ct) {
    for (double x : bt)
      differences.push_back(y - x);
  }
  std::sort(differences.begin(), differences.end());
  const size_t count = differences.size();
  e.shift = count % 2 == 1 ? differences[count / 2]
                           : 0.5 * (differences[count / 2 - 1] + differences[count / 2]);

  // The interval's ends are order statistics of the differences: the k-th from each end, with k
  // from U's null distribution (normal approximation).
  const double n = static_cast<double>(bt.size());
  const double m = static_cast<double>(ct.size());
  const double z = normal_upper_quantile(alpha / 2.0);
  const double k = std::floor(n * m / 2.0 - z * std::sqrt(n * m * (n + m + 1.0) / 12.0));
  if (k < 1.0) {
    e.shift_low = -std::numeric_limits<double>::infinity();
    e.shift_high = std::numeric_limits<double>::infinity();
  } else {
    const auto index = static_cast<size_t>(k);
    e.shift_low = differences[index - 1];
    e.shift_high = differences[count - index];
  }
  return e;
}

}  // namespace lpbench::stats
