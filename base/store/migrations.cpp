#include "base/store/migrations.h"

#include <fmt/format.h>

#include "base/store/sqlite.h"

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
  int8_backend     TEXT,                   -- where INT8 products ran ('cpu-…' is an emulation); NULL: none
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

// Version 4: measurement you can trust. Region timings per step, the GPU's clocks and
// temperature at the first measured step and at the end of a run (and whether the clock fell),
// artifacts such as profiler traces, and the kernel suite's results.
constexpr std::string_view kSchemaV4 = R"sql(
ALTER TABLE runs ADD COLUMN clock_fell INTEGER;   -- 1: the SM clock fell during the measured steps

CREATE TABLE regions (
  run_id    INTEGER NOT NULL REFERENCES runs(id),
  step      INTEGER NOT NULL,
  name      TEXT NOT NULL,        -- 'forward', 'gemm', 'quantize', ... (ranges nest)
  calls     INTEGER NOT NULL,
  total_ms  REAL NOT NULL,
  PRIMARY KEY (run_id, step, name)
) WITHOUT ROWID;

CREATE TABLE device_samples (
  run_id            INTEGER NOT NULL REFERENCES runs(id),
  phase             TEXT NOT NULL CHECK (phase IN ('first_measured', 'end')),
  step              INTEGER,
  sm_clock_mhz      REAL,
  memory_clock_mhz  REAL,
  temperature_c     REAL,
  power_w           REAL,
  throttle_reasons  INTEGER,       -- NVML's clock event reasons bit mask
  throttle_text     TEXT,
  at                TEXT NOT NULL,
  PRIMARY KEY (run_id, phase)
) WITHOUT ROWID;

CREATE TABLE run_artifacts (
  id      INTEGER PRIMARY KEY,
  run_id  INTEGER NOT NULL REFERENCES runs(id),
  kind    TEXT NOT NULL,          -- 'trace'
  step    INTEGER,
  path    TEXT NOT NULL,
  detail  TEXT
);

CREATE TABLE kernel_results (
  id          INTEGER PRIMARY KEY,
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id),
  name        TEXT NOT NULL,      -- the benchmark's name
  op          TEXT NOT NULL,      -- 'gemm', 'quantize'
  model       TEXT,
  part        TEXT,               -- qkv, out, gate_up, down, output
  gemm        TEXT,               -- fprop, dgrad, wgrad
  recipe      TEXT NOT NULL,
  variant     TEXT NOT NULL,      -- 'prequantized', 'with_quantization'
  backend     TEXT NOT NULL,
  m           INTEGER,
  n           INTEGER,
  k           INTEGER,
  status      TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'skipped')),
  reason      TEXT,
  samples     INTEGER,
  median_ms   REAL,
  p10_ms      REAL,
  p90_ms      REAL,
  tflops      REAL,               -- TFLOP/s (TOP/s for INT8) at the median
  gb_s        REAL,               -- bytes read and written over the median time
  gpu_name    TEXT,
  config_json TEXT
);
CREATE INDEX kernel_results_by_sweep ON kernel_results(sweep_id);
)sql";

// Version 5: how busy the machine was around each run, and the kernel suite's mean and CPU time
// per call (what Google Benchmark's own JSON carries) with its repetitions.
constexpr std::string_view kSchemaV5 = R"sql(
ALTER TABLE runs ADD COLUMN contention TEXT;   -- why the run counts as measured under contention; NULL: it does not

CREATE TABLE load_samples (
  run_id               INTEGER NOT NULL REFERENCES runs(id),
  phase                TEXT NOT NULL,    -- 'start', 'end'
  load_1m              REAL,             -- /proc/loadavg
  cpu_count            INTEGER NOT NULL, -- online CPUs
  others_cpu_share     REAL,             -- end: the share of all CPUs' time since the start that other processes used
  gpu_utilization_pct  REAL,             -- NVML, the run's GPU (lpbench's own work included)
  gpu_other_processes  INTEGER,          -- NVML, compute processes on the run's GPU other than lpbench
  at                   TEXT NOT NULL,
  PRIMARY KEY (run_id, phase)
) WITHOUT ROWID;

ALTER TABLE kernel_results ADD COLUMN mean_ms REAL;        -- mean over the timed calls
ALTER TABLE kernel_results ADD COLUMN cpu_ms REAL;         -- this process's CPU time per call
ALTER TABLE kernel_results ADD COLUMN repetitions INTEGER; -- Google Benchmark repetitions pooled
)sql";

// Version 6: the kernel suite's timed samples, so that `compare` judges a kernel by the same
// statistics as a step (a U test on the samples, not only the stored median).
constexpr std::string_view kSchemaV6 = R"sql(
CREATE TABLE kernel_samples (
  result_id  INTEGER NOT NULL REFERENCES kernel_results(id),
  idx        INTEGER NOT NULL,  -- in the order timed
  ms         REAL NOT NULL,
  PRIMARY KEY (result_id, idx)
) WITHOUT ROWID;
)sql";

// Version 7: data-parallel runs. tokens_per_step counts every rank's tokens; the per-rank
// figures (rank 0 gathers them at the end of a run) say whether one rank held the others back.
constexpr std::string_view kSchemaV7 = R"sql(
ALTER TABLE runs ADD COLUMN world_size INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN sharding TEXT;  -- e.g. 'zero1 (gloo)'; NULL: one process
CREATE TABLE run_ranks (
  run_id         INTEGER NOT NULL REFERENCES runs(id),
  rank           INTEGER NOT NULL,
  step_ms        REAL,  -- median over the measured steps, as this rank timed them
  peak_mem_gib   REAL,  -- this rank's peak allocated memory
  comm_ms        REAL,  -- median per step of the time its collectives took
  PRIMARY KEY (run_id, rank)
) WITHOUT ROWID;
)sql";

constexpr std::string_view kSchemaV8 = R"sql(
-- The GPU's SM clock (NVML) as the step ran; NULL on a CPU, without NVML, or before version 8.
ALTER TABLE steps ADD COLUMN sm_clock_mhz REAL;
)sql";

constexpr std::string_view kSchemaV9 = R"sql(
-- torch's CPU kernel set (ATen's dispatch level, oneDNN's ISA cap where set); NULL before version 9.
ALTER TABLE runs ADD COLUMN cpu_kernels TEXT;
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list{
      {1, "sweeps, runs, steps, run_modules", kSchemaV1},
      {2, "run level, model and depth, sweep labels, eval_steps, run_events", kSchemaV2},
      {3, "step_metrics", kSchemaV3},
      {4, "regions, device_samples, run_artifacts, kernel_results, runs.clock_fell", kSchemaV4},
      {5, "load_samples, runs.contention, kernel mean, CPU time and repetitions", kSchemaV5},
      {6, "kernel_samples", kSchemaV6},
      {7, "runs.world_size and sharding, run_ranks", kSchemaV7},
      {8, "steps.sm_clock_mhz", kSchemaV8},
      {9, "runs.cpu_kernels", kSchemaV9},
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
