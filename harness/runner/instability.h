#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

// Training instabilities, seen one step at a time: a loss spike, a gradient norm that grows far
// past its recent level, a non-finite value. Each becomes a run event (kind, step, detail), so a
// drifting recipe says when and how it drifted, not only where it ended.
namespace lpbench::runner {

struct Instability {
  std::string kind;  // loss_spike, grad_norm_growth, non_finite
  int64_t step = 0;
  std::string detail;
};

class InstabilityWatch {
 public:
  // Compared with the median of the last kWindow steps, once kWindow steps are seen: a loss
  // kSpikeRatio times that median, a gradient norm kGrowthRatio times it. A kind that fired stays
  // quiet for kWindow steps, so one excursion is one event.
  static constexpr size_t kWindow = 50;
  static constexpr double kSpikeRatio = 1.5;
  static constexpr double kGrowthRatio = 10.0;

  std::vector<Instability> observe(int64_t step, std::optional<double> loss,
                                   std::optional<double> grad_norm);

 private:
  struct Series {
    std::deque<double> recent;
    std::optional<int64_t> last_fired;
    bool quiet(int64_t step) const;
    std::optional<double> median() const;
    void push(double value);
  };
  Series loss_;
  Series grad_norm_;
  bool non_finite_seen_ = false;
};

}  // namespace lpbench::runner
