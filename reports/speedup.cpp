#include "reports/speedup.h"

#include <fmt/format.h>

namespace lpbench::reports {

std::string_view to_string(SpeedVerdict verdict) {
  switch (verdict) {
    case SpeedVerdict::faster:
      return "faster";
    case SpeedVerdict::slower:
      return "slower";
    case SpeedVerdict::same:
      return "same";
  }
  return "?";
}

Speedup speedup(const stats::Summary& baseline, const stats::Summary& candidate,
                double work_ratio) {
  Speedup s;
  s.ratio = work_ratio * baseline.median / candidate.median;
  s.low = work_ratio * baseline.p10 / candidate.p90;
  s.high = work_ratio * baseline.p90 / candidate.p10;
  if (s.low > 1.0) {
    s.verdict = SpeedVerdict::faster;
  } else if (s.high < 1.0) {
    s.verdict = SpeedVerdict::slower;
  }
  return s;
}

std::string speedup_text(const Speedup& s) {
  std::string number = fmt::format("{:.2f}", s.ratio);
  if (number == "1.00" && s.verdict != SpeedVerdict::same) number = fmt::format("{:.3f}", s.ratio);
  return fmt::format("{}× {}", number, to_string(s.verdict));
}

std::string speedup_range_text(const Speedup& s) {
  return fmt::format("{:.2f}× ({:.2f}–{:.2f})", s.ratio, s.low, s.high);
}

std::optional<std::string> speedup_refusal(const store::RunRecord& run,
                                           const stats::Summary& step_ms) {
  if (run.status != store::RunStatus::ok) {
    return fmt::format("{} run {} ended {}", run.recipe, run.id, store::to_string(run.status));
  }
  if (step_ms.count == 0) return fmt::format("{} run {} has no measured step", run.recipe, run.id);
  return std::nullopt;
}

}  // namespace lpbench::reports
