#pragma once

#include "harness/runner/active_run.h"
#include "harness/runner/sweep_context.h"

namespace lpbench::runner {

// Data parallel: each rank's median measured step, peak memory and median communication time
// per step (the collectives' regions, with --regions) of a run that ended ok, gathered into
// rank 0's store (run_ranks), so that one rank holding the others back shows. Every rank calls
// it at the end of each such run, in the same order; a failed gather is reported and skipped.
void record_rank_figures(SweepContext& context, const ActiveRun& active);

}  // namespace lpbench::runner
