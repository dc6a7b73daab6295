#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/config/run_config.h"
#include "reports/published_tables.h"

namespace lpbench::reproduce {

// How a table is to be reproduced, as the command line asks.
struct PlanOptions {
  int64_t steps = 50;
  int64_t layers = 2;  // depth run, at most each model's own
  // Each row at its published depth (overrides `layers`); the memory plan turns on activation
  // checkpointing (or lowers a default micro-batch) where that makes it fit one device.
  bool full_depth = false;
  int64_t seq_len = 0;  // 0: each model's default
  int64_t micro_batch = 0;
  std::string device = "auto";
  std::string db = "lpbench.db";
  // A row that one device cannot hold runs as this many data-parallel ranks on this machine,
  // sharded as the memory plan chooses (1: such a row is listed, not run).
  int64_t nproc_per_node = 1;
  double memory_budget_gib = 0.0;  // 0: the device's memory
};

// One row of a published table, resolved against this build.
struct PlannedRow {
  const reports::PublishedRow* row = nullptr;
  // Why this row cannot run here ("model llama2-7b not available in this build"); empty: it can.
  std::string unavailable;
  config::ResolvedRun run;  // when available: bf16 and the row's recipe, at `layers_run`
  // Ranks the row runs as (data parallel where one device cannot hold it); with more than one,
  // `run` is what rank 0 resolves and the row runs through `lpbench run --nproc-per-node`.
  int64_t ranks = 1;
  // The row's arguments to `lpbench run` (after "run"), which runs it the same way.
  std::vector<std::string> run_args;
  int64_t layers_run = 0;
  std::optional<int64_t> layers_published;
  double flops_per_step = 0.0;  // model FLOPs of one step at the depth run (MEASURE.md)
};

struct Plan {
  const reports::PublishedTable* table = nullptr;
  std::vector<PlannedRow> rows;
  size_t runnable() const;
};

// Resolves every row. A row whose model, level or recipe this build lacks is marked
// unavailable; bad options (steps, sizes, device) are an InputError. Touches nothing.
Plan make_plan(const reports::PublishedTable& table, const PlanOptions& options);

// The table's label for a sweep of it: "reproduce:<id>".
std::string sweep_label(const reports::PublishedTable& table);

}  // namespace lpbench::reproduce
