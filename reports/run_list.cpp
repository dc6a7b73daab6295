#include "reports/run_list.h"

#include "reports/text_table.h"

namespace lpbench::reports {

std::string render_run_list(const store::Store& store) {
  using Align = TextTable::Align;
  TextTable table({{"run", Align::right},
                   {"sweep", Align::right},
                   {"workload"},
                   {"recipe"},
                   {"device"},
                   {"status"},
                   {"steps", Align::right},
                   {"started"},
                   {"error"}});
  for (const store::RunRecord& run : store.runs()) {
    std::string error = run.error.value_or("");
    if (error.size() > 80) error = error.substr(0, 77) + "...";
    table.add_row({std::to_string(run.id), std::to_string(run.sweep_id), run.workload, run.recipe,
                   run.device, std::string(store::to_string(run.status)),
                   std::to_string(store.steps(run.id).size()), run.started_at, error});
  }
  if (table.rows() == 0) return "No runs recorded yet.\n";
  return table.markdown();
}

}  // namespace lpbench::reports
