#include "harness/store/store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "harness/env/files.h"
#include "harness/env/process.h"
#include "harness/env/time_stamp.h"
#include "harness/errors.h"
#include "harness/store/migrations.h"

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
    "clock_fell";

std::optional<int64_t> optional_int(const Statement& s, int index) {
  if (s.column_is_null(index)) return std::nullopt;
  return s.column_int(index);
}

RunRecord read_run(const Statement& s) {
  RunRecord r;
  r.id = s.column_int(0);
  r.sweep_id = s.column_int(1);
  r.workload = s.column_text(2);
  r.recipe = s.column_text(3);
  r.device = s.column_text(4);
  r.int8_backend = s.column_optional_text(5);
  r.config_json = s.column_text(6);
  r.status = parse_run_status(s.column_text(7));
  r.error = s.column_optional_text(8);
  r.started_at = s.column_text(9);
  r.finished_at = s.column_optional_text(10);
  r.provenance.host = s.column_text(11);
  r.pid = s.column_int(12);
  r.process_start = s.column_text(13);
  r.provenance.git_commit = s.column_text(14);
  r.provenance.git_dirty = s.column_int(15) != 0;
  r.provenance.cpu_name = s.column_optional_text(16);
  r.provenance.gpu_name = s.column_optional_text(17);
  r.provenance.driver_version = s.column_optional_text(18);
  r.provenance.cuda_version = s.column_optional_text(19);
  r.provenance.torch_version = s.column_text(20);
  r.provenance.lpbench_version = s.column_text(21);
  r.provenance.build_type = s.column_text(22);
  r.tokens_per_step = s.column_int(23);
  r.level = s.column_optional_text(24).value_or("");
  r.model = s.column_optional_text(25).value_or("");
  r.layers_run = optional_int(s, 26);
  r.layers_published = optional_int(s, 27);
  r.data = s.column_optional_text(28);
  r.memory_estimate_gib = s.column_optional_double(29);
  if (!s.column_is_null(30)) r.clock_fell = s.column_int(30) != 0;
  return r;
}

constexpr std::string_view kSweepColumns =
    "id, started_at, command_line, host, lpbench_version, label";

SweepRecord read_sweep(const Statement& s) {
  return {s.column_int(0),  s.column_text(1), s.column_text(2),
          s.column_text(3), s.column_text(4), s.column_optional_text(5)};
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

int64_t Store::add_sweep(const SweepRecord& sweep) {
  Transaction transaction(connection_);
  Statement(connection_,
            "INSERT INTO sweeps (started_at, command_line, host, lpbench_version, label) "
            "VALUES (?, ?, ?, ?, ?)")
      .bind(1, sweep.started_at)
      .bind(2, sweep.command_line)
      .bind(3, sweep.host)
      .bind(4, sweep.lpbench_version)
      .bind(5, sweep.label)
      .run();
  const int64_t id = connection_.last_insert_rowid();
  transaction.commit();
  return id;
}

int64_t Store::add_run(const RunRecord& r) {
  Transaction transaction(connection_);
  const env::Provenance& p = r.provenance;
  Statement(connection_, fmt::format("INSERT INTO runs ({}) VALUES (NULL, ?, ?, ?, ?, ?, ?, "
                                     "'running', NULL, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                                     "?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                                     kRunColumns))
      .bind(1, r.sweep_id)
      .bind(2, r.workload)
      .bind(3, r.recipe)
      .bind(4, r.device)
      .bind(5, r.int8_backend)
      .bind(6, r.config_json)
      .bind(7, r.started_at)
      .bind(8, p.host)
      .bind(9, r.pid)
      .bind(10, r.process_start)
      .bind(11, p.git_commit)
      .bind(12, static_cast<int64_t>(p.git_dirty))
      .bind(13, p.cpu_name)
      .bind(14, p.gpu_name)
      .bind(15, p.driver_version)
      .bind(16, p.cuda_version)
      .bind(17, p.torch_version)
      .bind(18, p.lpbench_version)
      .bind(19, p.build_type)
      .bind(20, r.tokens_per_step)
      .bind(21, r.level)
      .bind(22, r.model)
      .bind(23, r.layers_run)
      .bind(24, r.layers_published)
      .bind(25, r.data)
      .bind(26, r.memory_estimate_gib)
      .run();
  const int64_t id = connection_.last_insert_rowid();
  transaction.commit();
  return id;
}

void Store::add_modules(int64_t run_id, const std::vector<ModuleRecord>& modules) {
  Transaction transaction(connection_);
  Statement insert(connection_,
                   "INSERT INTO run_modules (run_id, module, kind, quantized, gemms, reason) "
                   "VALUES (?, ?, ?, ?, ?, ?)");
  for (const ModuleRecord& m : modules) {
    insert.bind(1, run_id)
        .bind(2, m.module)
        .bind(3, m.kind)
        .bind(4, static_cast<int64_t>(m.quantized))
        .bind(5, m.gemms)
        .bind(6, m.reason)
        .run();
  }
  transaction.commit();
}

void Store::add_step(const StepRecord& s) {
  Transaction transaction(connection_);
  Statement(connection_,
            "INSERT INTO steps (run_id, step, warmup, loss, step_ms, tokens, lr, grad_norm, "
            "peak_mem_gib, peak_reserved_gib) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, s.run_id)
      .bind(2, s.step)
      .bind(3, static_cast<int64_t>(s.warmup))
      .bind(4, s.loss)
      .bind(5, s.step_ms)
      .bind(6, s.tokens)
      .bind(7, s.lr)
      .bind(8, s.grad_norm)
      .bind(9, s.peak_mem_gib)
      .bind(10, s.peak_reserved_gib)
      .run();
  transaction.commit();
}

void Store::add_eval(const EvalRecord& e) {
  Transaction transaction(connection_);
  Statement(connection_,
            "INSERT INTO eval_steps (run_id, step, val_loss, tokens) VALUES (?, ?, ?, ?)")
      .bind(1, e.run_id)
      .bind(2, e.step)
      .bind(3, e.val_loss)
      .bind(4, e.tokens)
      .run();
  transaction.commit();
}

int64_t Store::add_event(const EventRecord& e) {
  Transaction transaction(connection_);
  Statement(connection_,
            "INSERT INTO run_events (run_id, step, kind, detail, at) VALUES (?, ?, ?, ?, ?)")
      .bind(1, e.run_id)
      .bind(2, e.step)
      .bind(3, e.kind)
      .bind(4, e.detail)
      .bind(5, e.at.empty() ? env::utc_now_iso8601() : e.at)
      .run();
  const int64_t id = connection_.last_insert_rowid();
  transaction.commit();
  return id;
}

void Store::add_metrics(const std::vector<MetricRecord>& metrics) {
  if (metrics.empty()) return;
  Transaction transaction(connection_);
  Statement insert(connection_,
                   "INSERT INTO step_metrics (run_id, step, name, value) VALUES (?, ?, ?, ?)");
  for (const MetricRecord& m : metrics) {
    insert.bind(1, m.run_id).bind(2, m.step).bind(3, m.name).bind(4, m.value).run();
  }
  transaction.commit();
}

void Store::add_regions(const std::vector<RegionRecord>& regions) {
  if (regions.empty()) return;
  Transaction transaction(connection_);
  Statement insert(
      connection_,
      "INSERT INTO regions (run_id, step, name, calls, total_ms) VALUES (?, ?, ?, ?, ?)");
  for (const RegionRecord& r : regions) {
    insert.bind(1, r.run_id)
        .bind(2, r.step)
        .bind(3, r.name)
        .bind(4, r.calls)
        .bind(5, r.total_ms)
        .run();
  }
  transaction.commit();
}

void Store::add_device_sample(const DeviceSampleRecord& d) {
  Transaction transaction(connection_);
  Statement(connection_,
            "INSERT OR REPLACE INTO device_samples (run_id, phase, step, sm_clock_mhz, "
            "memory_clock_mhz, temperature_c, power_w, throttle_reasons, throttle_text, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, d.run_id)
      .bind(2, d.phase)
      .bind(3, d.step)
      .bind(4, d.sm_clock_mhz)
      .bind(5, d.memory_clock_mhz)
      .bind(6, d.temperature_c)
      .bind(7, d.power_w)
      .bind(8, d.throttle_reasons)
      .bind(9, d.throttle_text)
      .bind(10, d.at.empty() ? env::utc_now_iso8601() : d.at)
      .run();
  transaction.commit();
}

int64_t Store::add_artifact(const ArtifactRecord& a) {
  Transaction transaction(connection_);
  Statement(connection_,
            "INSERT INTO run_artifacts (run_id, kind, step, path, detail) VALUES (?, ?, ?, ?, ?)")
      .bind(1, a.run_id)
      .bind(2, a.kind)
      .bind(3, a.step)
      .bind(4, a.path)
      .bind(5, a.detail)
      .run();
  const int64_t id = connection_.last_insert_rowid();
  transaction.commit();
  return id;
}

void Store::set_clock_fell(int64_t run_id, bool fell) {
  Transaction transaction(connection_);
  Statement(connection_, "UPDATE runs SET clock_fell = ? WHERE id = ?")
      .bind(1, static_cast<int64_t>(fell))
      .bind(2, run_id)
      .run();
  transaction.commit();
}

int64_t Store::add_kernel_result(const KernelResultRecord& k) {
  Transaction transaction(connection_);
  Statement(connection_,
            "INSERT INTO kernel_results (sweep_id, name, op, model, part, gemm, recipe, variant, "
            "backend, m, n, k, status, reason, samples, median_ms, p10_ms, p90_ms, tflops, gb_s, "
            "gpu_name, config_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, ?, ?)")
      .bind(1, k.sweep_id)
      .bind(2, k.name)
      .bind(3, k.op)
      .bind(4, k.model)
      .bind(5, k.part)
      .bind(6, k.gemm)
      .bind(7, k.recipe)
      .bind(8, k.variant)
      .bind(9, k.backend)
      .bind(10, k.m)
      .bind(11, k.n)
      .bind(12, k.k)
      .bind(13, k.status)
      .bind(14, k.reason)
      .bind(15, k.samples)
      .bind(16, k.median_ms)
      .bind(17, k.p10_ms)
      .bind(18, k.p90_ms)
      .bind(19, k.tflops)
      .bind(20, k.gb_s)
      .bind(21, k.gpu_name)
      .bind(22, k.config_json)
      .run();
  const int64_t id = connection_.last_insert_rowid();
  transaction.commit();
  return id;
}

void Store::finish_run(int64_t run_id, RunStatus status, const std::optional<std::string>& error) {
  Transaction transaction(connection_);
  Statement(connection_, "UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE id = ?")
      .bind(1, to_string(status))
      .bind(2, error)
      .bind(3, env::utc_now_iso8601())
      .bind(4, run_id)
      .run();
  transaction.commit();
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
                  "peak_reserved_gib FROM steps WHERE run_id = ? ORDER BY step");
  query.bind(1, run_id);
  while (query.step()) {
    StepRecord s;
    s.run_id = run_id;
    s.step = query.column_int(0);
    s.warmup = query.column_int(1) != 0;
    s.loss = nan_if_null(query.column_optional_double(2));
    s.step_ms = query.column_double(3);
    s.tokens = query.column_int(4);
    s.lr = query.column_double(5);
    s.grad_norm = nan_if_null(query.column_optional_double(6));
    s.peak_mem_gib = query.column_optional_double(7);
    s.peak_reserved_gib = query.column_optional_double(8);
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
    out.push_back({run_id, query.column_int(0), nan_if_null(query.column_optional_double(1)),
                   query.column_int(2)});
  }
  return out;
}

std::vector<EventRecord> Store::events(int64_t run_id) const {
  std::vector<EventRecord> out;
  Statement query(connection_,
                  "SELECT id, step, kind, detail, at FROM run_events WHERE run_id = ? ORDER BY id");
  query.bind(1, run_id);
  while (query.step()) {
    out.push_back({query.column_int(0), run_id, optional_int(query, 1), query.column_text(2),
                   query.column_text(3), query.column_text(4)});
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
    out.push_back({run_id, query.column_int(0), query.column_text(1),
                   nan_if_null(query.column_optional_double(2))});
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
    out.push_back({run_id, query.column_int(0), query.column_text(1), query.column_int(2),
                   query.column_double(3)});
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
    DeviceSampleRecord d;
    d.run_id = run_id;
    d.phase = query.column_text(0);
    d.step = optional_int(query, 1);
    d.sm_clock_mhz = query.column_optional_double(2);
    d.memory_clock_mhz = query.column_optional_double(3);
    d.temperature_c = query.column_optional_double(4);
    d.power_w = query.column_optional_double(5);
    d.throttle_reasons = optional_int(query, 6);
    d.throttle_text = query.column_optional_text(7).value_or("");
    d.at = query.column_text(8);
    out.push_back(d);
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
    out.push_back({query.column_int(0), run_id, query.column_text(1), optional_int(query, 2),
                   query.column_text(3), query.column_optional_text(4)});
  }
  return out;
}

std::vector<KernelResultRecord> Store::kernel_results(std::optional<int64_t> sweep_id) const {
  std::vector<KernelResultRecord> out;
  Statement query(connection_,
                  "SELECT id, sweep_id, name, op, model, part, gemm, recipe, variant, backend, m, "
                  "n, k, status, reason, samples, median_ms, p10_ms, p90_ms, tflops, gb_s, "
                  "gpu_name, config_json FROM kernel_results WHERE ?1 IS NULL OR sweep_id = ?1 "
                  "ORDER BY id");
  if (sweep_id) {
    query.bind(1, *sweep_id);
  } else {
    query.bind_null(1);
  }
  while (query.step()) {
    KernelResultRecord k;
    k.id = query.column_int(0);
    k.sweep_id = query.column_int(1);
    k.name = query.column_text(2);
    k.op = query.column_text(3);
    k.model = query.column_optional_text(4);
    k.part = query.column_optional_text(5);
    k.gemm = query.column_optional_text(6);
    k.recipe = query.column_text(7);
    k.variant = query.column_text(8);
    k.backend = query.column_text(9);
    k.m = query.column_int(10);
    k.n = query.column_int(11);
    k.k = query.column_int(12);
    k.status = query.column_text(13);
    k.reason = query.column_optional_text(14);
    k.samples = query.column_int(15);
    k.median_ms = query.column_optional_double(16);
    k.p10_ms = query.column_optional_double(17);
    k.p90_ms = query.column_optional_double(18);
    k.tflops = query.column_optional_double(19);
    k.gb_s = query.column_optional_double(20);
    k.gpu_name = query.column_optional_text(21);
    k.config_json = query.column_text(22);
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
    out.push_back({run_id, query.column_text(0), query.column_text(1), query.column_int(2) != 0,
                   query.column_text(3), query.column_text(4)});
  }
  return out;
}

}  // namespace lpbench::store
