#include "harness/runner/rank_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/stats/stats.h"
#include "workloads/parallel/group.h"

namespace lpbench::runner {

namespace {

const std::set<std::string>& collective_regions() {
  static const std::set<std::string> names{"all-gather", "reduce-scatter", "all-reduce",
                                           "broadcast"};
  return names;
}

double median_or_nan(std::vector<double> values) {
  return values.empty() ? NAN : stats::summarize(values).median;
}

std::optional<double> unless_nan(double value) {
  if (std::isnan(value)) return std::nullopt;
  return value;
}

}  // namespace

void record_rank_figures(SweepContext& context, const ActiveRun& active) {
  const std::shared_ptr<const workloads::parallel::Group>& group = context.run.group;
  if (!group) return;
  std::vector<double> step_ms;
  double peak = NAN;
  for (const store::StepRecord& s : context.store.steps(active.run_id)) {
    if (!s.warmup) step_ms.push_back(s.step_ms);
    if (s.peak_mem_gib) peak = std::isnan(peak) ? *s.peak_mem_gib : std::max(peak, *s.peak_mem_gib);
  }
  std::map<int64_t, double> comm_by_step;
  for (const store::RegionRecord& r : context.store.regions(active.run_id)) {
    if (collective_regions().count(r.name) > 0) comm_by_step[r.step] += r.total_ms;
  }
  std::vector<double> comm;
  for (const auto& [step, ms] : comm_by_step)
    comm.push_back(ms);

  at::Tensor mine = at::tensor({median_or_nan(step_ms), peak, median_or_nan(comm)},
                               at::TensorOptions().dtype(at::kDouble))
                        .to(group->device);
  at::Tensor all = at::empty({3 * group->size}, mine.options());
  try {
    workloads::parallel::all_gather(*group, all, mine);
  } catch (const std::exception& e) {
    context.message(fmt::format("per-rank figures not gathered: {}", e.what()));
    return;
  }
  if (group->rank != 0) return;
  const at::Tensor host = all.cpu();
  const double* v = host.data_ptr<double>();
  std::vector<store::RankRecord> ranks;
  for (int r = 0; r < group->size; ++r) {
    ranks.push_back({active.run_id, r, unless_nan(v[3 * r]), unless_nan(v[3 * r + 1]),
                     unless_nan(v[3 * r + 2])});
  }
  context.store.add_ranks(ranks);
}

}  // namespace lpbench::runner
