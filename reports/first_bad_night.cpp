#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/stats/stats.h"
#include "reports/compare_parts.h"

// Which night broke it: the step a CI owner takes after a red nightly is `git log A..B`.
namespace lpbench::reports::detail {

namespace {

std::string short_commit(const std::string& commit) {
  return commit.empty() ? std::string("an unknown commit") : commit.substr(0, 12);
}

std::string night_text(const Night& n) {
  return fmt::format("sweep {} ({}, commit {})", n.sweep_id, n.started_at.substr(0, 16),
                     short_commit(n.commit));
}

}  // namespace

std::string name_first_bad_night(const std::vector<Night>& baseline,
                                 const std::vector<Night>& candidate) {
  if (baseline.empty() || candidate.empty()) return {};
  std::vector<Night> nights = baseline;
  std::stable_sort(nights.begin(), nights.end(),
                   [](const Night& a, const Night& b) { return a.started_at < b.started_at; });
  // Tonight: the newest candidate night.
  const Night tonight =
      *std::max_element(candidate.begin(), candidate.end(),
                        [](const Night& a, const Night& b) { return a.started_at < b.started_at; });
  std::vector<double> values;
  for (const Night& n : nights)
    values.push_back(n.value);
  const double good = stats::summarize(values).median;
  // A night is bad when it lies nearer tonight's value than the history's median.
  auto bad = [&](const Night& n) {
    return std::abs(n.value - tonight.value) < std::abs(n.value - good);
  };
  size_t first_bad = nights.size();  // index into nights; nights.size(): tonight
  while (first_bad > 0 && bad(nights[first_bad - 1]))
    --first_bad;
  const Night& first = first_bad == nights.size() ? tonight : nights[first_bad];
  if (first_bad == 0) {
    return fmt::format(
        "every night in the baseline reads as bad already; the oldest is {}: widen the history "
        "to find the last good night",
        night_text(first));
  }
  const Night& last_good = nights[first_bad - 1];
  if (!last_good.commit.empty() && last_good.commit == first.commit) {
    return fmt::format(
        "first bad night {}, last good night {}: the same commit, so the change is in the "
        "machine, its drivers or the suite, not in the code",
        night_text(first), night_text(last_good));
  }
  return fmt::format("first bad night {}, last good night {}; what changed: `git log {}..{}`",
                     night_text(first), night_text(last_good), short_commit(last_good.commit),
                     short_commit(first.commit));
}

}  // namespace lpbench::reports::detail
