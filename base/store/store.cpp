#include "base/store/store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>
#include <tuple>

#include "base/env/files.h"
#include "base/env/process.h"
#include "base/env/time_stamp.h"
#include "base/errors.h"
#include "base/store/migrations.h"

namespace lpbench::store {

namespace {

constexpr int kBusyTimeoutMs = 10000;
constexpr std::string_view kSqliteHeader{"SQLite format 3\0", 16};

bool has_sqlite_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  in.read(header, sizeof(header));
  return in.gcount() == static_cast<std::streamsize>(sizeof(header)) &&
         std::string_view(header, sizeof(header)) == kSqliteHeader;
}

// Everything that can be said about a path without opening it as a database.
void check_path(const std::string& path, Store::Mode mode) {
  if (path.empty()) throw InputError("no database path given; pass --db FILE");
  const env::FileInfo file = env::file_info(path);
  if (file.exists) {
    if (!file.regular) {
      throw InputError(
          fmt::format("'{}' is not a regular file; give a database file to --db", path));
    }
    if (file.size > 0 && !has_sqlite_header(path)) {
      throw InputError(fmt::format(
          "'{}' is not a SQLite database (it lacks the SQLite header); give another --db path",
          path));
    }
    if (mode == Store::Mode::write && !env::writable(path)) {
      throw InputError(
          fmt::format("cannot write database '{}': permission denied; check its "
                      "permissions or give another --db path",
                      path));
    }
    return;
  }
  if (mode == Store::Mode::read) {
    throw InputError(
        fmt::format("no database at '{}'; run `lpbench run` first or give --db", path));
  }
  const std::string dir = env::parent_directory(path);
  if (!env::file_info(dir).directory) {
    throw InputError(
        fmt::format("cannot create database '{}': directory '{}' does not exist", path, dir));
  }
  if (!env::writable(dir)) {
    throw InputError(
        fmt::format("cannot create database '{}': directory '{}' is not writable", path, dir));
  }
}

void refuse_newer_schema(const Connection& connection, int version) {
  if (version > latest_schema_version()) {
    throw InputError(fmt::format(
        "database '{}' has schema version {}, newer than this lpbench understands ({}); use a "
        "newer lpbench or give another --db path",
        connection.path(), version, latest_schema_version()));
  }
}

// SQLite's quick_check (every page's b-tree structure, no index cross-check): a truncated or
// overwritten file is refused with one line before anything reads garbage or appends to it. It
// reads every page once, a fraction of a second for a database of a hundred megabytes.
void refuse_damaged(const Connection& connection) {
  std::string verdict;
  try {
    Statement check(connection, "PRAGMA quick_check(1)");
    if (check.step()) verdict = check.column_text(0);
  } catch (const InputError&) {
    // Too damaged for the check itself to finish; a busy or unreadable file says so elsewhere.
    const int code = sqlite3_errcode(connection.handle()) & 0xff;
    if (code != SQLITE_CORRUPT && code != SQLITE_NOTADB) throw;
    verdict = sqlite3_errmsg(connection.handle());
  }
  if (verdict == "ok") return;
  std::replace(verdict.begin(), verdict.end(), '\n', ' ');
  throw InputError(fmt::format(
      "database '{}' is damaged (SQLite's quick_check: {}); restore it from a copy or give "
      "another --db path",
      connection.path(), verdict));
}

// WAL is a property of the file, set by whichever writer gets there first. The switch needs an
// exclusive lock, and two connections switching at once (several runs opening a new database at
// one moment) can each hold a shared lock while waiting for the other's: a deadlock that the
// busy handler would sit in until its timeout (seen once: a writer failed here after 10 s).
// So each attempt waits briefly, a refused one lets its locks go, and attempts repeat until the
// busy timeout; the waits differ by process so that one of two contenders gets through first.
void use_wal(const Connection& connection) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  const int attempt_ms = 50 + static_cast<int>(env::current_process().pid % 100);
  sqlite3_busy_timeout(connection.handle(), attempt_ms);
  for (;;) {
    try {
      Statement mode(connection, "PRAGMA journal_mode = WAL");
      mode.step();
      break;
    } catch (const InputError&) {
      const int code = sqlite3_errcode(connection.handle()) & 0xff;
      const bool busy = code == SQLITE_BUSY || code == SQLITE_LOCKED;
      if (!busy || Clock::now() > deadline) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt_ms / 5));
  }
}

void configure(Connection& connection, bool writable) {
  sqlite3_busy_timeout(connection.handle(), kBusyTimeoutMs);
  connection.exec("PRAGMA foreign_keys = ON");
  if (writable) {
    use_wal(connection);
    sqlite3_busy_timeout(connection.handle(), kBusyTimeoutMs);  // use_wal's short waits end here
    // In WAL mode NORMAL loses no committed transaction on a process crash (only, at worst, the
    // last ones on a power cut), and keeps one commit per step cheap.
    connection.exec("PRAGMA synchronous = NORMAL");
  }
}

double nan_if_null(const std::optional<double>& value) {
  return value.value_or(NAN);
}

constexpr std::string_view kRunColumns =
    "id, sweep_id, workload, recipe, device, int8_backend, config_json, status, error, "
    "started_at, finished_at, host, pid, process_start, git_commit, git_dirty, cpu_name, "
    "gpu_name, driver_version, cuda_version, torch_version, lpbench_version, build_type, "
    "tokens_per_step, level, model, layers_run, layers_published, data, memory_estimate_gib, "
    "clock_fell, contention, world_size, sharding, cpu_kernels";

RunRecord read_run(const Statement& s) {
  Columns c(s);
  RunRecord r;
  r.id = c.integer();
  r.sweep_id = c.integer();
  r.workload = c.text();
  r.recipe = c.text();
  r.device = c.text();
  r.int8_backend = c.optional_text();
  r.config_json = c.text();
  r.status = parse_run_status(c.text());
  r.error = c.optional_text();
  r.started_at = c.text();
  r.finished_at = c.optional_text();
  r.provenance.host = c.text();
  r.pid = c.integer();
  r.process_start = c.text();
  r.provenance.git_commit = c.text();
  r.provenance.git_dirty = c.flag();
  r.provenance.cpu_name = c.optional_text();
  r.provenance.gpu_name = c.optional_text();
  r.provenance.driver_version = c.optional_text();
  r.provenance.cuda_version = c.optional_text();
  r.provenance.torch_version = c.text();
  r.provenance.lpbench_version = c.text();
  r.provenance.build_type = c.text();
  r.tokens_per_step = c.integer();
  r.level = c.optional_text().value_or("");
  r.model = c.optional_text().value_or("");
  r.layers_run = c.optional_integer();
  r.layers_published = c.optional_integer();
  r.data = c.optional_text();
  r.memory_estimate_gib = c.optional_real();
  r.clock_fell = c.optional_flag();
  r.contention = c.optional_text();
  r.world_size = c.integer();
  r.sharding = c.optional_text();
  r.provenance.cpu_kernels = c.optional_text();
  return r;
}

constexpr std::string_view kSweepColumns =
    "id, started_at, command_line, host, lpbench_version, label";

SweepRecord read_sweep(const Statement& s) {
  Columns c(s);
  SweepRecord r;
  r.id = c.integer();
  r.started_at = c.text();
  r.command_line = c.text();
  r.host = c.text();
  r.lpbench_version = c.text();
  r.label = c.optional_text();
  return r;
}

// "INSERT INTO table (columns) VALUES (?, ...)" with one placeholder per column.
std::string insert_sql(std::string_view verb, std::string_view table, std::string_view columns,
                       size_t values) {
  const size_t named = static_cast<size_t>(std::count(columns.begin(), columns.end(), ',')) + 1;
  if (named != values) {
    throw StoreError(
        fmt::format("{} {}: {} columns named, {} values given", verb, table, named, values));
  }
  std::string placeholders;
  for (size_t i = 0; i < values; ++i)
    placeholders += i == 0 ? "?" : ", ?";
  return fmt::format("{} INTO {} ({}) VALUES ({})", verb, table, columns, placeholders);
}

// One row, in its own transaction; returns its rowid.
// INSERT one row inside a transaction the caller holds; returns its id.
template <typename... Values>
int64_t insert_row_unlocked(Connection& connection, std::string_view table,
                            std::string_view columns, const Values&... values) {
  Statement(connection, insert_sql("INSERT", table, columns, sizeof...(Values)))
      .bind_all(values...)
      .run();
  return connection.last_insert_rowid();
}

template <typename... Values>
int64_t insert_row(Connection& connection, std::string_view table, std::string_view columns,
                   const Values&... values) {
  Transaction transaction(connection);
  const int64_t id = insert_row_unlocked(connection, table, columns, values...);
  transaction.commit();
  return id;
}

// Every row of `rows` in one transaction, each bound from the tuple `fields(row)` returns.
template <typename Row, typename Fields>
void insert_rows(Connection& connection, std::string_view verb, std::string_view table,
                 std::string_view columns, const std::vector<Row>& rows, Fields fields) {
  if (rows.empty()) return;
  Transaction transaction(connection);
  using Tuple = decltype(fields(rows.front()));
  Statement insert(connection, insert_sql(verb, table, columns, std::tuple_size_v<Tuple>));
  for (const Row& row : rows) {
    std::apply([&](const auto&... values) { insert.bind_all(values...); }, fields(row));
    insert.run();
  }
  transaction.commit();
}

// UPDATE runs SET <assignment> WHERE id = run_id, in its own transaction.
template <typename... Values>
void update_run(Connection& connection, int64_t run_id, std::string_view assignments,
                const Values&... values) {
  Transaction transaction(connection);
  Statement(connection, fmt::format("UPDATE runs SET {} WHERE id = ?", assignments))
      .bind_all(values..., run_id)
      .run();
  transaction.commit();
}

bool process_gone(const RunRecord& run, const std::string& this_host) {
  return run.status == RunStatus::running && run.provenance.host == this_host &&
         !env::is_alive({run.pid, run.process_start});
}

// Reads every row of a query over kRunColumns. A `running` run of this host whose process is
// gone reads as interrupted.
std::vector<RunRecord> read_runs(Statement& query) {
  const std::string host = env::host_name();
  std::vector<RunRecord> out;
  while (query.step()) {
    RunRecord run = read_run(query);
    if (process_gone(run, host)) run.status = RunStatus::interrupted;
    out.push_back(std::move(run));
  }
  return out;
}

}  // namespace

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::running:
      return "running";
    case RunStatus::ok:
      return "ok";
    case RunStatus::diverged:
      return "diverged";
    case RunStatus::oom:
      return "oom";
    case RunStatus::failed:
      return "failed";
    case RunStatus::interrupted:
      return "interrupted";
  }
  return "?";
}

RunStatus parse_run_status(std::string_view text) {
  for (RunStatus s : {RunStatus::running, RunStatus::ok, RunStatus::diverged, RunStatus::oom,
                      RunStatus::failed, RunStatus::interrupted}) {
    if (to_string(s) == text) return s;
  }
  throw StoreError(fmt::format("unknown run status '{}' in the database", text));
}

bool emulated_on_cpu(std::string_view backend) {
  // One name, or "fprop: <name>; dgrad: <name>; wgrad: <name>" where the GEMMs differ.
  while (!backend.empty()) {
    const size_t end = std::min(backend.find(';'), backend.size());
    std::string_view name = backend.substr(0, end);
    backend.remove_prefix(std::min(end + 1, backend.size()));
    if (const size_t colon = name.find(": "); colon != std::string_view::npos) {
      name.remove_prefix(colon + 2);
    }
    while (name.starts_with(' '))
      name.remove_prefix(1);
    if (name.starts_with("cpu-")) return true;
  }
  return false;
}

bool products_emulated(const RunRecord& run) {
  return run.int8_backend && emulated_on_cpu(*run.int8_backend);
}

Store Store::open(const std::string& path, Mode mode) {
  check_path(path, mode);
  const bool read_only_possible = mode == Mode::read;
  const int flags =
      read_only_possible ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  Connection connection(path, flags);
  sqlite3_busy_timeout(connection.handle(), kBusyTimeoutMs);
  // Read the version before anything could write: a newer database stays byte for byte as it is.
  const int version = read_schema_version(connection);
  refuse_newer_schema(connection, version);
  refuse_damaged(connection);

  if (mode == Mode::read) {
    if (version == latest_schema_version()) {
      configure(connection, /*writable=*/false);
      return Store(std::move(connection));
    }
    // An older schema is migrated in place, which needs write access.
    check_path(path, Mode::write);
    connection = Connection(path, SQLITE_OPEN_READWRITE);
  }
  configure(connection, /*writable=*/true);
  migrate(connection);
  Store store(std::move(connection));
  if (mode == Mode::write) store.mark_interrupted_runs();
  return store;
}

int Store::schema_version() const {
  return read_schema_version(connection_);
}

int64_t Store::add_sweep(const SweepRecord& w) {
  return insert_row(connection_, "sweeps", "started_at, command_line, host, lpbench_version, label",
                    w.started_at, w.command_line, w.host, w.lpbench_version, w.label);
}

int64_t Store::add_run(const RunRecord& r) {
  const env::Provenance& p = r.provenance;
  return insert_row(connection_, "runs",
                    "sweep_id, workload, recipe, device, int8_backend, config_json, status, "
                    "started_at, host, pid, process_start, git_commit, git_dirty, cpu_name, "
                    "gpu_name, driver_version, cuda_version, torch_version, lpbench_version, "
                    "build_type, tokens_per_step, level, model, layers_run, layers_published, "
                    "data, memory_estimate_gib, world_size, sharding, cpu_kernels",
                    r.sweep_id, r.workload, r.recipe, r.device, r.int8_backend, r.config_json,
                    to_string(RunStatus::running), r.started_at, p.host, r.pid, r.process_start,
                    p.git_commit, p.git_dirty, p.cpu_name, p.gpu_name, p.driver_version,
                    p.cuda_version, p.torch_version, p.lpbench_version, p.build_type,
                    r.tokens_per_step, r.level, r.model, r.layers_run, r.layers_published, r.data,
                    r.memory_estimate_gib, r.world_size, r.sharding, p.cpu_kernels);
}

void Store::add_modules(int64_t run_id, const std::vector<ModuleRecord>& modules) {
  insert_rows(connection_, "INSERT", "run_modules",
              "run_id, module, kind, quantized, gemms, reason", modules,
              [&](const ModuleRecord& m) {
                return std::tuple(run_id, m.module, m.kind, m.quantized, m.gemms, m.reason);
              });
}

void Store::add_step(const StepRecord& s) {
  insert_row(connection_, "steps",
             "run_id, step, warmup, loss, step_ms, tokens, lr, grad_norm, peak_mem_gib, "
             "peak_reserved_gib, sm_clock_mhz",
             s.run_id, s.step, s.warmup, s.loss, s.step_ms, s.tokens, s.lr, s.grad_norm,
             s.peak_mem_gib, s.peak_reserved_gib, s.sm_clock_mhz);
}

void Store::add_eval(const EvalRecord& e) {
  insert_row(connection_, "eval_steps", "run_id, step, val_loss, tokens", e.run_id, e.step,
             e.val_loss, e.tokens);
}

int64_t Store::add_event(const EventRecord& e) {
  return insert_row(connection_, "run_events", "run_id, step, kind, detail, at", e.run_id, e.step,
                    e.kind, e.detail, e.at.empty() ? env::utc_now_iso8601() : e.at);
}

void Store::add_metrics(const std::vector<MetricRecord>& metrics) {
  insert_rows(connection_, "INSERT", "step_metrics", "run_id, step, name, value", metrics,
              [](const MetricRecord& m) { return std::tuple(m.run_id, m.step, m.name, m.value); });
}

void Store::add_regions(const std::vector<RegionRecord>& regions) {
  insert_rows(connection_, "INSERT", "regions", "run_id, step, name, calls, total_ms", regions,
              [](const RegionRecord& r) {
                return std::tuple(r.run_id, r.step, r.name, r.calls, r.total_ms);
              });
}

void Store::add_ranks(const std::vector<RankRecord>& ranks) {
  insert_rows(connection_, "INSERT", "run_ranks", "run_id, rank, step_ms, peak_mem_gib, comm_ms",
              ranks, [](const RankRecord& r) {
                return std::tuple(r.run_id, r.rank, r.step_ms, r.peak_mem_gib, r.comm_ms);
              });
}

void Store::add_device_sample(const DeviceSampleRecord& d) {
  insert_rows(connection_, "INSERT OR REPLACE", "device_samples",
              "run_id, phase, step, sm_clock_mhz, memory_clock_mhz, temperature_c, power_w, "
              "throttle_reasons, throttle_text, at",
              std::vector<DeviceSampleRecord>{d}, [](const DeviceSampleRecord& x) {
                return std::tuple(x.run_id, x.phase, x.step, x.sm_clock_mhz, x.memory_clock_mhz,
                                  x.temperature_c, x.power_w, x.throttle_reasons, x.throttle_text,
                                  x.at.empty() ? env::utc_now_iso8601() : x.at);
              });
}

void Store::add_load_sample(const LoadSampleRecord& l) {
  insert_rows(connection_, "INSERT OR REPLACE", "load_samples",
              "run_id, phase, load_1m, cpu_count, others_cpu_share, gpu_utilization_pct, "
              "gpu_other_processes, at",
              std::vector<LoadSampleRecord>{l}, [](const LoadSampleRecord& x) {
                return std::tuple(x.run_id, x.phase, x.load_1m, x.cpu_count, x.others_cpu_share,
                                  x.gpu_utilization_pct, x.gpu_other_processes,
                                  x.at.empty() ? env::utc_now_iso8601() : x.at);
              });
}

int64_t Store::add_artifact(const ArtifactRecord& a) {
  return insert_row(connection_, "run_artifacts", "run_id, kind, step, path, detail", a.run_id,
                    a.kind, a.step, a.path, a.detail);
}

void Store::set_clock_fell(int64_t run_id, bool fell) {
  update_run(connection_, run_id, "clock_fell = ?", fell);
}

void Store::set_contention(int64_t run_id, const std::optional<std::string>& contention) {
  update_run(connection_, run_id, "contention = ?", contention);
}

int64_t Store::add_kernel_result(const KernelResultRecord& k) {
  Transaction transaction(connection_);
  const int64_t id = insert_row_unlocked(
      connection_, "kernel_results",
      "sweep_id, name, op, model, part, gemm, recipe, variant, backend, m, n, k, "
      "status, reason, samples, median_ms, p10_ms, p90_ms, tflops, gb_s, gpu_name, "
      "config_json, mean_ms, cpu_ms, repetitions",
      k.sweep_id, k.name, k.op, k.model, k.part, k.gemm, k.recipe, k.variant, k.backend, k.m, k.n,
      k.k, k.status, k.reason, k.samples, k.median_ms, k.p10_ms, k.p90_ms, k.tflops, k.gb_s,
      k.gpu_name, k.config_json, k.mean_ms, k.cpu_ms, k.repetitions);
  Statement insert(connection_, insert_sql("INSERT", "kernel_samples", "result_id, idx, ms", 3));
  for (size_t i = 0; i < k.samples_ms.size(); ++i) {
    insert.bind_all(id, static_cast<int64_t>(i), k.samples_ms[i]);
    insert.run();
  }
  transaction.commit();
  return id;
}

std::vector<double> Store::kernel_samples(int64_t result_id) const {
  std::vector<double> out;
  Statement query(connection_, "SELECT ms FROM kernel_samples WHERE result_id = ? ORDER BY idx");
  query.bind(1, result_id);
  while (query.step())
    out.push_back(Columns(query).real());
  return out;
}

void Store::finish_run(int64_t run_id, RunStatus status, const std::optional<std::string>& error) {
  update_run(connection_, run_id, "status = ?, error = ?, finished_at = ?", to_string(status),
             error, env::utc_now_iso8601());
}

int Store::mark_interrupted_runs() {
  const std::string host = env::host_name();
  std::vector<int64_t> gone;
  {
    Statement query(
        connection_,
        fmt::format("SELECT {} FROM runs WHERE status = 'running' AND host = ?", kRunColumns));
    query.bind(1, host);
    while (query.step()) {
      RunRecord run = read_run(query);
      if (process_gone(run, host)) gone.push_back(run.id);
    }
  }
  for (int64_t id : gone) {
    finish_run(id, RunStatus::interrupted,
               std::string("the process running it ended without recording an outcome"));
  }
  return static_cast<int>(gone.size());
}

std::vector<SweepRecord> Store::sweeps() const {
  std::vector<SweepRecord> out;
  Statement query(connection_, fmt::format("SELECT {} FROM sweeps ORDER BY id", kSweepColumns));
  while (query.step())
    out.push_back(read_sweep(query));
  return out;
}

std::vector<SweepRecord> Store::sweeps(const SweepQuery& q) const {
  std::vector<SweepRecord> out;
  Statement query(connection_,
                  fmt::format("SELECT {} FROM sweeps WHERE (?1 IS NULL OR label = ?1) AND "
                              "(?2 IS NULL OR host = ?2) AND (?3 IS NULL OR started_at >= ?3) "
                              "ORDER BY id",
                              kSweepColumns));
  query.bind(1, q.label).bind(2, q.host).bind(3, q.started_from);
  while (query.step())
    out.push_back(read_sweep(query));
  return out;
}

std::optional<SweepRecord> Store::sweep(int64_t id) const {
  Statement query(connection_, fmt::format("SELECT {} FROM sweeps WHERE id = ?", kSweepColumns));
  query.bind(1, id);
  if (!query.step()) return std::nullopt;
  return read_sweep(query);
}

std::vector<RunRecord> Store::runs(std::optional<int64_t> sweep_id) const {
  Statement query(connection_,
                  fmt::format("SELECT {} FROM runs WHERE ?1 IS NULL OR sweep_id = ?1 ORDER BY id",
                              kRunColumns));
  if (sweep_id) {
    query.bind(1, *sweep_id);
  } else {
    query.bind_null(1);
  }
  return read_runs(query);
}

std::optional<RunRecord> Store::run(int64_t id) const {
  Statement query(connection_, fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns));
  query.bind(1, id);
  std::vector<RunRecord> found = read_runs(query);
  if (found.empty()) return std::nullopt;
  return found.front();
}

std::vector<RunRecord> Store::runs_of_commit(const std::string& prefix) const {
  // A prefix match without LIKE, whose wildcards a commit text must not be able to use.
  Statement query(connection_,
                  fmt::format("SELECT {} FROM runs WHERE substr(git_commit, 1, length(?1)) = ?1 "
                              "ORDER BY id",
                              kRunColumns));
  query.bind(1, prefix);
  return read_runs(query);
}

std::vector<StepRecord> Store::steps(int64_t run_id) const {
  std::vector<StepRecord> out;
  Statement query(connection_,
                  "SELECT step, warmup, loss, step_ms, tokens, lr, grad_norm, peak_mem_gib, "
                  "peak_reserved_gib, sm_clock_mhz FROM steps WHERE run_id = ? ORDER BY step");
  query.bind(1, run_id);
  while (query.step()) {
    Columns c(query);
    StepRecord s;
    s.run_id = run_id;
    s.step = c.integer();
    s.warmup = c.flag();
    s.loss = nan_if_null(c.optional_real());
    s.step_ms = c.real();
    s.tokens = c.integer();
    s.lr = c.real();
    s.grad_norm = nan_if_null(c.optional_real());
    s.peak_mem_gib = c.optional_real();
    s.peak_reserved_gib = c.optional_real();
    s.sm_clock_mhz = c.optional_real();
    out.push_back(s);
  }
  return out;
}

std::vector<EvalRecord> Store::evals(int64_t run_id) const {
  std::vector<EvalRecord> out;
  Statement query(connection_,
                  "SELECT step, val_loss, tokens FROM eval_steps WHERE run_id = ? ORDER BY step");
  query.bind(1, run_id);
  while (query.step()) {
    Columns c(query);
    EvalRecord e;
    e.run_id = run_id;
    e.step = c.integer();
    e.val_loss = nan_if_null(c.optional_real());
    e.tokens = c.integer();
    out.push_back(e);
  }
  return out;
}

std::vector<EventRecord> Store::events(int64_t run_id) const {
  std::vector<EventRecord> out;
  Statement query(connection_,
                  "SELECT id, step, kind, detail, at FROM run_events WHERE run_id = ? ORDER BY id");
  query.bind(1, run_id);
  while (query.step()) {
    Columns c(query);
    EventRecord e;
    e.id = c.integer();
    e.run_id = run_id;
    e.step = c.optional_integer();
    e.kind = c.text();
    e.detail = c.text();
    e.at = c.text();
    out.push_back(e);
  }
  return out;
}

std::vector<MetricRecord> Store::metrics(int64_t run_id, const std::string& prefix) const {
  std::vector<MetricRecord> out;
  Statement query(connection_,
                  "SELECT step, name, value FROM step_metrics WHERE run_id = ? AND "
                  "substr(name, 1, length(?2)) = ?2 ORDER BY step, name");
  query.bind(1, run_id).bind(2, prefix);
  while (query.step()) {
    Columns c(query);
    MetricRecord m;
    m.run_id = run_id;
    m.step = c.integer();
    m.name = c.text();
    m.value = nan_if_null(c.optional_real());
    out.push_back(m);
  }
  return out;
}

std::vector<RankRecord> Store::ranks(int64_t run_id) const {
  std::vector<RankRecord> out;
  Statement query(connection_,
                  "SELECT rank, step_ms, peak_mem_gib, comm_ms FROM run_ranks WHERE run_id = ? "
                  "ORDER BY rank");
  query.bind(1, run_id);
  while (query.step()) {
    Columns c(query);
    RankRecord r;
    r.run_id = run_id;
    r.rank = c.integer();
    r.step_ms = c.optional_real();
    r.peak_mem_gib = c.optional_real();
    r.comm_ms = c.optional_real();
    out.push_back(r);
  }
  return out;
}

std::vector<RegionRecord> Store::regions(int64_t run_id) const {
  std::vector<RegionRecord> out;
  Statement query(connection_,
                  "SELECT step, name, calls, total_ms FROM regions WHERE run_id = ? "
                  "ORDER BY step, name");
  query.bind(1, run_id);
  while (query.step()) {
    Columns c(query);
    RegionRecord r;
    r.run_id = run_id;
    r.step = c.integer();
    r.name = c.text();
    r.calls = c.integer();
    r.total_ms = c.real();
    out.push_back(r);
  }
  return out;
}

std::vector<DeviceSampleRecord> Store::device_samples(int64_t run_id) const {
  std::vector<DeviceSampleRecord> out;
  Statement query(connection_,
                  "SELECT phase, step, sm_clock_mhz, memory_clock_mhz, temperature_c, power_w, "
                  "throttle_reasons, throttle_text, at FROM device_samples WHERE run_id = ? "
                  "ORDER BY phase DESC");
  query.bind(1, run_id);
  while (query.step()) {
    Columns c(query);
    DeviceSampleRecord d;
    d.run_id = run_id;
    d.phase = c.text();
    d.step = c.optional_integer();
    d.sm_clock_mhz = c.optional_real();
    d.memory_clock_mhz = c.optional_real();
    d.temperature_c = c.optional_real();
    d.power_w = c.optional_real();
    d.throttle_reasons = c.optional_integer();
    d.throttle_text = c.optional_text().value_or("");
    d.at = c.text();
    out.push_back(d);
  }
  return out;
}

std::vector<LoadSampleRecord> Store::load_samples(int64_t run_id) const {
  std::vector<LoadSampleRecord> out;
  Statement query(connection_,
                  "SELECT phase, load_1m, cpu_count, others_cpu_share, gpu_utilization_pct, "
                  "gpu_other_processes, at FROM load_samples WHERE run_id = ? ORDER BY phase DESC");
  query.bind(1, run_id);
  while (query.step()) {
    Columns c(query);
    LoadSampleRecord l;
    l.run_id = run_id;
    l.phase = c.text();
    l.load_1m = c.optional_real();
    l.cpu_count = c.integer();
    l.others_cpu_share = c.optional_real();
    l.gpu_utilization_pct = c.optional_real();
    l.gpu_other_processes = c.optional_integer();
    l.at = c.text();
    out.push_back(l);
  }
  return out;
}

std::vector<ArtifactRecord> Store::artifacts(int64_t run_id) const {
  std::vector<ArtifactRecord> out;
  Statement query(connection_,
                  "SELECT id, kind, step, path, detail FROM run_artifacts WHERE run_id = ? "
                  "ORDER BY id");
  query.bind(1, run_id);
  while (query.step()) {
    Columns c(query);
    ArtifactRecord a;
    a.id = c.integer();
    a.run_id = run_id;
    a.kind = c.text();
    a.step = c.optional_integer();
    a.path = c.text();
    a.detail = c.optional_text();
    out.push_back(a);
  }
  return out;
}

std::vector<KernelResultRecord> Store::kernel_results(std::optional<int64_t> sweep_id) const {
  std::vector<KernelResultRecord> out;
  Statement query(connection_,
                  "SELECT id, sweep_id, name, op, model, part, gemm, recipe, variant, backend, m, "
                  "n, k, status, reason, samples, median_ms, p10_ms, p90_ms, tflops, gb_s, "
                  "gpu_name, config_json, mean_ms, cpu_ms, repetitions FROM kernel_results "
                  "WHERE ?1 IS NULL OR sweep_id = ?1 ORDER BY id");
  if (sweep_id) {
    query.bind(1, *sweep_id);
  } else {
    query.bind_null(1);
  }
  while (query.step()) {
    Columns c(query);
    KernelResultRecord k;
    k.id = c.integer();
    k.sweep_id = c.integer();
    k.name = c.text();
    k.op = c.text();
    k.model = c.optional_text();
    k.part = c.optional_text();
    k.gemm = c.optional_text();
    k.recipe = c.text();
    k.variant = c.text();
    k.backend = c.text();
    k.m = c.integer();
    k.n = c.integer();
    k.k = c.integer();
    k.status = c.text();
    k.reason = c.optional_text();
    k.samples = c.integer();
    k.median_ms = c.optional_real();
    k.p10_ms = c.optional_real();
    k.p90_ms = c.optional_real();
    k.tflops = c.optional_real();
    k.gb_s = c.optional_real();
    k.gpu_name = c.optional_text();
    k.config_json = c.text();
    k.mean_ms = c.optional_real();
    k.cpu_ms = c.optional_real();
    k.repetitions = c.optional_integer();
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<ModuleRecord> Store::modules(int64_t run_id) const {
  std::vector<ModuleRecord> out;
  Statement query(connection_,
                  "SELECT module, kind, quantized, gemms, reason FROM run_modules "
                  "WHERE run_id = ? ORDER BY rowid");
  query.bind(1, run_id);
  while (query.step()) {
    Columns c(query);
    ModuleRecord m;
    m.run_id = run_id;
    m.module = c.text();
    m.kind = c.text();
    m.quantized = c.flag();
    m.gemms = c.text();
    m.reason = c.text();
    out.push_back(m);
  }
  return out;
}

}  // namespace lpbench::store
