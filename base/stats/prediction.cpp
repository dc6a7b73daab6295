#include "base/stats/prediction.h"

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace lpbench::stats {

namespace {

// The continued fraction of the regularized incomplete beta function I_x(a, b), evaluated by the
// modified Lentz method; converges fast for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double f = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    // The even step, then the odd step, of the fraction's terms; converged when an odd step
    // no longer changes the value.
    const double terms[2] = {m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
                             -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0))};
    double step = 1.0;
    for (const double term : terms) {
      d = 1.0 + term * d;
      if (std::abs(d) < kTiny) d = kTiny;
      c = 1.0 + term / c;
      if (std::abs(c) < kTiny) c = kTiny;
      d = 1.0 / d;
      step = c * d;
      f *= step;
    }
    if (std::abs(step - 1.0) < kEpsilon) return f;
  }
  return f;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
  return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

// P(T ≤ t) for Student's t with `dof` degrees of freedom.
double student_t_cdf(double t, double dof) {
  const double tail = 0.5 * incomplete_beta(dof / 2.0, 0.5, dof / (dof + t * t));
  return t >= 0.0 ? 1.0 - tail : tail;
}

}  // namespace

double student_t_quantile(double p, double dof) {
  if (!(p > 0.0 && p < 1.0) || !(dof > 0.0)) {
    throw std::invalid_argument("student_t_quantile: p in (0, 1) and dof > 0");
  }
  if (p < 0.5) return -student_t_quantile(1.0 - p, dof);
  // The CDF rises monotonically: bisect between 0 and a bound past the quantile.
  double low = 0.0;
  double high = 1.0;
  while (student_t_cdf(high, dof) < p)
    high *= 2.0;
  for (int i = 0; i < 200 && high - low > 1e-12 * high; ++i) {
    const double mid = 0.5 * (low + high);
    (student_t_cdf(mid, dof) < p ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

std::optional<Interval> prediction_interval(std::span<const double> values, double alpha) {
  std::vector<double> v;
  for (double x : values) {
    if (std::isfinite(x)) v.push_back(x);
  }
  if (v.size() < 2) return std::nullopt;
  const double n = static_cast<double>(v.size());
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double squares = 0.0;
  for (double x : v)
    squares += (x - mean) * (x - mean);
  const double sd = std::sqrt(squares / (n - 1.0));
  const double half =
      student_t_quantile(1.0 - alpha / 2.0, n - 1.0) * sd * std::sqrt(1.0 + 1.0 / n);
  return Interval{mean - half, mean + half};
}

}  // namespace lpbench::stats
