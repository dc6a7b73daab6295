#pragma once

#include <cstdint>

#include "harness/runner/active_run.h"
#include "harness/runner/sweep_context.h"

namespace lpbench::runner {

// One step of a run: timed, recorded with its memory, regions, diagnostics and instabilities,
// then checked for divergence, then followed by the sampled figures and validation that stay
// outside the timing. A failure or divergence ends the run.
void train_step(SweepContext& context, ActiveRun& active, int64_t step);

}  // namespace lpbench::runner
