#pragma once

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <string>

#include "base/env/process.h"
#include "base/store/store.h"
#include "tests/support/run_record.h"

namespace lpbench::testing {

// A nightly sweep of one bf16 run whose measured steps take about `ms`.
inline int64_t add_nightly(store::Store& store, double ms, int day, std::mt19937& rng,
                           const std::string& command_line = "lpbench run") {
  const int64_t sweep = store.add_sweep({0, fmt::format("2026-11-{:02d}T03:00:00.000Z", day),
                                         command_line, env::host_name(), "0", "nightly"});
  store::RunRecord r = test_run_record(sweep, "bf16");
  r.config_json = R"({"training":{"steps":40,"seed":0}})";
  r.started_at = "2026-11-01T00:00:00.000Z";
  r.provenance.git_commit = "abcdef0123";
  r.tokens_per_step = 128;
  r.level = "model";
  r.model = "tiny";
  r.layers_run = 4;
  const int64_t run = store.add_run(r);
  std::normal_distribution<double> noise(ms, ms * 0.01);
  for (int step = 0; step < 40; ++step) {
    // A NaN loss at step 7 of every run: exported as an empty cell.
    const double loss = step == 7 ? NAN : 3.0 - 0.01 * step;
    store.add_step(
        {run, step, step < 4, loss, noise(rng), 128, 1e-3 / 3.0, 0.5, std::nullopt, std::nullopt});
  }
  store.add_eval({run, 39, 2.625, 4096});
  store.finish_run(run, store::RunStatus::ok, std::nullopt);
  return sweep;
}

}  // namespace lpbench::testing
