#include "harness/runner/instability.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace lpbench::runner {

bool InstabilityWatch::Series::quiet(int64_t step) const {
  return last_fired && step - *last_fired < static_cast<int64_t>(kWindow);
}

std::optional<double> InstabilityWatch::Series::median() const {
  if (recent.size() < kWindow) return std::nullopt;
  std::vector<double> sorted(recent.begin(), recent.end());
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  return sorted[sorted.size() / 2];
}

void InstabilityWatch::Series::push(double value) {
  recent.push_back(value);
  if (recent.size() > kWindow) recent.pop_front();
}

std::vector<Instability> InstabilityWatch::observe(int64_t step, std::optional<double> loss,
                                                   std::optional<double> grad_norm) {
  std::vector<Instability> found;
  const bool loss_bad = loss && !std::isfinite(*loss);
  const bool norm_bad = grad_norm && !std::isfinite(*grad_norm);
  if ((loss_bad || norm_bad) && !non_finite_seen_) {
    non_finite_seen_ = true;
    found.push_back({"non_finite", step,
                     fmt::format("{} is not finite (loss {}, gradient norm {})",
                                 loss_bad ? "the loss" : "the gradient norm", loss.value_or(NAN),
                                 grad_norm.value_or(NAN))});
  }
  if (loss && std::isfinite(*loss)) {
    const std::optional<double> median = loss_.median();
    if (median && *median > 0 && *loss > kSpikeRatio * *median && !loss_.quiet(step)) {
      loss_.last_fired = step;
      found.push_back({"loss_spike", step,
                       fmt::format("loss {:.4g} is {:.2f}x the median {:.4g} of the last {} steps",
                                   *loss, *loss / *median, *median, kWindow)});
    }
    loss_.push(*loss);
  }
  if (grad_norm && std::isfinite(*grad_norm)) {
    const std::optional<double> median = grad_norm_.median();
    if (median && *median > 0 && *grad_norm > kGrowthRatio * *median && !grad_norm_.quiet(step)) {
      grad_norm_.last_fired = step;
      found.push_back(
          {"grad_norm_growth", step,
           fmt::format("gradient norm {:.4g} is {:.1f}x the median {:.4g} of the last {} steps",
                       *grad_norm, *grad_norm / *median, *median, kWindow)});
    }
    grad_norm_.push(*grad_norm);
  }
  return found;
}

}  // namespace lpbench::runner
