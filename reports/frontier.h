#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/store/store.h"
#include "reports/chart.h"
#include "reports/convergence.h"
#include "reports/speedup.h"

// The speed–accuracy frontier: each recipe's layer speedup over BF16, measured on a GPU, against
// its loss gap to BF16 from a convergence judgement, so that a reader sees at once which recipes
// train like BF16 and which of those is fastest.
namespace lpbench::reports {

// Where the speedups come from: one sweep's runs of one layer workload on a GPU.
struct SpeedSource {
  int64_t sweep_id = 0;
  std::string workload;
  std::string gpu;
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
// layer-level BF16 run on a GPU ended ok (llama2-7b's layer where that sweep has several). A
// given sweep without such a run is an InputError naming what it holds.
Frontier build_frontier(const store::Store& store, const std::vector<RecipeVerdict>& verdicts,
                        std::optional<int64_t> speed_sweep);

// The table (recipe, speedup with its range, loss gap with the seeds' range, parity), the
// fastest recipe at parity marked, and where the speedups come from.
std::string render_frontier(const Frontier& frontier);

// Loss gap (%) against speedup (×), one point per recipe with a speedup; recipes at parity and
// the others as two series, the fastest at parity as a third.
Chart frontier_chart(const Frontier& frontier);

}  // namespace lpbench::reports
