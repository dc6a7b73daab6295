#include "reports/hotspots.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "reports/text_table.h"

namespace lpbench::reports {

namespace {

struct RegionMeans {
  std::vector<std::string> order;             // region names, by first appearance
  std::map<std::string, double> ms_per_step;  // mean over the measured steps
  std::map<std::string, double> calls_per_step;
  double step_ms = 0.0;  // mean measured step time
};

RegionMeans region_means(const store::Store& store, const RunSummary& run) {
  RegionMeans means;
  std::set<int64_t> measured;
  double step_total = 0.0;
  for (const store::StepRecord& step : store.steps(run.run.id)) {
    if (step.warmup) continue;
    measured.insert(step.step);
    step_total += step.step_ms;
  }
  if (measured.empty()) return means;
  for (const store::RegionRecord& r : store.regions(run.run.id)) {
    if (!measured.count(r.step)) continue;
    if (!means.ms_per_step.count(r.name)) means.order.push_back(r.name);
    means.ms_per_step[r.name] += r.total_ms;
    means.calls_per_step[r.name] += static_cast<double>(r.calls);
  }
  const double n = static_cast<double>(measured.size());
  for (auto& [name, ms] : means.ms_per_step)
    ms /= n;
  for (auto& [name, calls] : means.calls_per_step)
    calls /= n;
  means.step_ms = step_total / n;
  return means;
}

}  // namespace

const char* const kHotspotReading =
    "Means over the measured steps, timed with CUDA events on the working stream (host clock on "
    "a CPU); regions nest, so shares do not add up.";

std::vector<HotspotTable> hotspot_tables(const store::Store& store, const SweepReport& report) {
  std::map<std::string, std::vector<const RunSummary*>> by_workload;
  std::vector<std::string> workloads;
  for (const RunSummary& run : report.runs) {
    if (!by_workload.count(run.run.workload)) workloads.push_back(run.run.workload);
    by_workload[run.run.workload].push_back(&run);
  }
  std::vector<HotspotTable> tables;
  for (const std::string& workload : workloads) {
    std::vector<RegionMeans> means;
    std::vector<std::string> order;
    std::vector<TextTable::Column> columns{{"region"}};
    for (const RunSummary* run : by_workload[workload]) {
      means.push_back(region_means(store, *run));
      for (const std::string& name : means.back().order) {
        if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
      }
      columns.push_back(
          {fmt::format("{} ms/step (share, calls)", run->run.recipe), TextTable::Align::right});
    }
    if (order.empty()) continue;
    TextTable table(columns);
    for (const std::string& name : order) {
      std::vector<std::string> row{name};
      for (const RegionMeans& m : means) {
        if (!m.ms_per_step.count(name) || m.step_ms <= 0) {
          row.emplace_back("—");
          continue;
        }
        row.push_back(fmt::format("{:.3f} ({:.1f} %, {:g})", m.ms_per_step.at(name),
                                  100.0 * m.ms_per_step.at(name) / m.step_ms,
                                  m.calls_per_step.at(name)));
      }
      table.add_row(row);
    }
    tables.push_back({workload, std::move(table)});
  }
  return tables;
}

std::string render_hotspots(const store::Store& store, const SweepReport& report) {
  std::string out;
  for (const HotspotTable& h : hotspot_tables(store, report))
    out += fmt::format("\n### Hotspots: {}\n\n{}", h.workload, h.table.markdown());
  if (!out.empty()) out += fmt::format("\n{}\n", kHotspotReading);
  return out;
}

}  // namespace lpbench::reports
