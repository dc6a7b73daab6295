#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/store/store.h"
#include "reports/run_summary.h"
#include "reports/text_table.h"

namespace lpbench::reports {

struct SweepReport {
  store::SweepRecord sweep;
  std::vector<RunSummary> runs;
  // Data-parallel runs' per-rank figures (run_ranks), by run id.
  std::map<int64_t, std::vector<store::RankRecord>> ranks;
  // Data-parallel runs' one-process twin in the database (scaling_baseline), by run id.
  std::map<int64_t, RunSummary> one_process;
  // The files written about single steps of its runs (--trace-step, --memory-snapshot).
  std::vector<store::ArtifactRecord> files;
};

// The newest of `runs` (a database's) that trained `run`'s workload and recipe in one process on
// the same device kind with one rank's share of its tokens per step (the per-GPU batch held equal),
// that ended ok; nullopt where there is none. Scaling efficiency is measured against it.
std::optional<store::RunRecord> scaling_baseline(const std::vector<store::RunRecord>& runs,
                                                 const store::RunRecord& run);

// The data-parallel runs of a sweep: ranks, sharding, tokens/s per GPU, the slowest and fastest
// rank's median step, the largest peak and the communication time per step; nullopt when the
// sweep has none.
std::optional<TextTable> data_parallel_table(const SweepReport& report);

SweepReport build_sweep_report(const store::Store& store, const store::SweepRecord& sweep);

// The table of one sweep and the notes that read it (what the columns mean, what a CPU or an
// emulated run can say, each run's error), for the Markdown and the HTML report alike.
struct SweepTable {
  TextTable table;
  std::vector<std::string> notes;
};
SweepTable sweep_table(const SweepReport& report);
// "Sweep 3 · 2026-11-22T03:04:05.678Z · host", with the label where the sweep has one.
std::string sweep_heading(const store::SweepRecord& sweep);

// The table of one sweep: workload, recipe, steps, median step_ms (p10–p90), tokens/s, speedup
// over bf16 with its verdict, final loss and loss gap, and the notes that keep it honest.
std::string render_sweep_markdown(const SweepReport& report);

}  // namespace lpbench::reports
