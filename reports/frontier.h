#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/store/store.h"
#include "reports/chart.h"
#include "reports/convergence.h"
#include "reports/speedup.h"
#include "reports/text_table.h"

// The speed–accuracy frontier: each recipe's layer speedup over BF16, measured on a GPU, against
// its loss gap to BF16 from a convergence judgement, so that a reader sees at once which recipes
// train like BF16 and which of those is fastest.
namespace lpbench::reports {

// Where the speedups come from: one sweep's runs of one layer workload on a GPU.
struct SpeedSource {
  int64_t sweep_id = 0;
  std::string workload;
  std::string gpu;
  std::string flagged;  // non-empty: why that sweep's times are not comparable as they are
};

struct FrontierRow {
  std::string recipe;
  RecipeVerdict verdict;           // the loss gap, its seeds and the parity verdict
  std::optional<Speedup> speedup;  // none: the speed sweep did not run this recipe (ok)
  bool fastest_at_parity = false;
};

struct Frontier {
  std::optional<SpeedSource> source;
  std::string no_speed;  // why there is no speed source, where there is none
  std::vector<FrontierRow> rows;
};

// `speed_sweep`: the sweep to take the speedups from; none: the newest sweep in `store` whose
// layer-level BF16 run on a GPU ended ok (llama2-7b's layer where that sweep has several) and
// whose runs of that workload were not flagged (the SM clock fell, other processes shared the GPU,
// or the caching allocator retried an allocation during measured steps); the newest flagged one
// only where no other exists, said so. A given sweep without such a
// run is an InputError naming what it holds.
Frontier build_frontier(const store::Store& store, const std::vector<RecipeVerdict>& verdicts,
                        std::optional<int64_t> speed_sweep);

// The table (recipe, speedup with its range, loss gap, seeds, parity), the fastest recipe at
// parity marked; where the speedups come from; which recipe is the fastest at parity. Markdown of
// the three: render_frontier.
TextTable frontier_table(const Frontier& frontier);
std::string frontier_source(const Frontier& frontier);
std::string frontier_finding(const Frontier& frontier);
std::string render_frontier(const Frontier& frontier,
                            const std::string& heading = "### Speed against accuracy");

// The frontiers a report shows: of the convergence runs among `sweeps` (model-level runs with
// validation losses, BF16 among them), one per label and workload, each recipe and seed from the
// newest sweep that ran it (a nightly's repeated nights do not count as seeds); speedups from
// the newest GPU layer sweep in the store. `title` names the label and workload.
struct TitledFrontier {
  std::string title;
  Frontier frontier;
};
std::vector<TitledFrontier> report_frontiers(const store::Store& store,
                                             const std::vector<store::SweepRecord>& sweeps);

// Loss gap (%) against speedup (×), one point per recipe with a speedup; recipes at parity and
// the others as two series, the fastest at parity as a third.
Chart frontier_chart(const Frontier& frontier);

}  // namespace lpbench::reports
