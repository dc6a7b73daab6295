#include "harness/store/migrations.h"

#include <fmt/format.h>

#include "harness/store/sqlite.h"

namespace lpbench::store {

namespace {

// Version 1: sweeps, runs with provenance, per-step rows, and what each run quantized.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE sweeps (
  id               INTEGER PRIMARY KEY,
  started_at       TEXT NOT NULL,          -- ISO 8601, UTC
  command_line     TEXT NOT NULL,
  host             TEXT NOT NULL,
  lpbench_version  TEXT NOT NULL
);

CREATE TABLE runs (
  id               INTEGER PRIMARY KEY,
  sweep_id         INTEGER NOT NULL REFERENCES sweeps(id),
  workload         TEXT NOT NULL,          -- '<level>:<model>'
  recipe           TEXT NOT NULL,
  device           TEXT NOT NULL,          -- 'cpu', 'cuda:0'
  int8_backend     TEXT,                   -- where INT8 products ran ('cpu-exact' is an emulation); NULL: none
  config_json      TEXT NOT NULL,          -- the resolved configuration of this run
  status           TEXT NOT NULL CHECK (status IN
                     ('running', 'ok', 'diverged', 'oom', 'failed', 'interrupted')),
  error            TEXT,
  started_at       TEXT NOT NULL,
  finished_at      TEXT,
  host             TEXT NOT NULL,
  pid              INTEGER NOT NULL,
  process_start    TEXT NOT NULL,          -- boot id and start time, to tell a live run from a reused pid
  git_commit       TEXT NOT NULL,
  git_dirty        INTEGER NOT NULL,
  cpu_name         TEXT,
  gpu_name         TEXT,
  driver_version   TEXT,
  cuda_version     TEXT,
  torch_version    TEXT NOT NULL,
  lpbench_version  TEXT NOT NULL,
  build_type       TEXT,
  tokens_per_step  INTEGER NOT NULL
);
CREATE INDEX runs_by_sweep ON runs(sweep_id);

CREATE TABLE steps (
  run_id             INTEGER NOT NULL REFERENCES runs(id),
  step               INTEGER NOT NULL,     -- 0-based optimizer step
  warmup             INTEGER NOT NULL,     -- 1: excluded from timing statistics
  loss               REAL,                 -- NULL: the loss was NaN
  step_ms            REAL NOT NULL,
  tokens             INTEGER NOT NULL,
  lr                 REAL NOT NULL,
  grad_norm          REAL,                 -- before clipping; NULL: NaN
  peak_mem_gib       REAL,                 -- NULL where the device reports no allocator figures
  peak_reserved_gib  REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE run_modules (
  run_id     INTEGER NOT NULL REFERENCES runs(id),
  module     TEXT NOT NULL,
  kind       TEXT NOT NULL,                -- 'linear', 'embedding'
  quantized  INTEGER NOT NULL,
  gemms      TEXT NOT NULL,                -- 'fprop=int8/tensor dgrad=... wgrad=...'
  reason     TEXT NOT NULL,
  UNIQUE (run_id, module)
);
)sql";

// Version 2: what a run measured (level, model, depth run and published, data, the memory plan's
// estimate), sweep labels for series such as nightly runs, validation losses, and run events.
constexpr std::string_view kSchemaV2 = R"sql(
ALTER TABLE sweeps ADD COLUMN label TEXT;                -- e.g. 'nightly'; NULL: an ad-hoc sweep

ALTER TABLE runs ADD COLUMN level TEXT;                  -- 'gemm', 'linear', 'layer', 'model'
ALTER TABLE runs ADD COLUMN model TEXT;
ALTER TABLE runs ADD COLUMN layers_run INTEGER;          -- the depth measured
ALTER TABLE runs ADD COLUMN layers_published INTEGER;    -- the model's published depth
ALTER TABLE runs ADD COLUMN data TEXT;                   -- where the tokens came from
ALTER TABLE runs ADD COLUMN memory_estimate_gib REAL;    -- the memory plan, beside the measured peak
UPDATE runs SET level = substr(workload, 1, instr(workload, ':') - 1),
                model = substr(workload, instr(workload, ':') + 1);

CREATE TABLE eval_steps (
  run_id    INTEGER NOT NULL REFERENCES runs(id),
  step      INTEGER NOT NULL,     -- the training step after which the model was evaluated
  val_loss  REAL,                 -- NULL: NaN
  tokens    INTEGER NOT NULL,     -- validation tokens evaluated
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE run_events (
  id       INTEGER PRIMARY KEY,
  run_id   INTEGER NOT NULL REFERENCES runs(id),
  step     INTEGER,               -- NULL: not tied to a step
  kind     TEXT NOT NULL,         -- 'loss_spike', 'grad_norm_growth', 'non_finite', ...
  detail   TEXT NOT NULL,
  at       TEXT NOT NULL          -- ISO 8601, UTC
);
CREATE INDEX run_events_by_run ON run_events(run_id);
)sql";

// Version 3: named per-step figures a workload reports (for example each expert's share of the
// tokens), sampled every few steps.
constexpr std::string_view kSchemaV3 = R"sql(
CREATE TABLE step_metrics (
  run_id  INTEGER NOT NULL REFERENCES runs(id),
  step    INTEGER NOT NULL,
  name    TEXT NOT NULL,          -- e.g. 'moe.layers.0.expert.3.share'
  value   REAL,                   -- NULL: NaN
  PRIMARY KEY (run_id, step, name)
) WITHOUT ROWID;
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list{
      {1, "sweeps, runs, steps, run_modules", kSchemaV1},
      {2, "run level, model and depth, sweep labels, eval_steps, run_events", kSchemaV2},
      {3, "step_metrics", kSchemaV3},
  };
  return list;
}

int latest_schema_version() {
  return migrations().back().version;
}

int read_schema_version(const Connection& connection) {
  Statement statement(connection, "PRAGMA user_version");
  statement.step();
  return static_cast<int>(statement.column_int(0));
}

void migrate(Connection& connection) {
  for (const Migration& migration : migrations()) {
    Transaction transaction(connection);
    // Re-read inside the write lock: another process may have migrated meanwhile.
    if (read_schema_version(connection) >= migration.version) continue;
    connection.exec(migration.sql);
    connection.exec(fmt::format("PRAGMA user_version = {}", migration.version));
    transaction.commit();
  }
}

}  // namespace lpbench::store
