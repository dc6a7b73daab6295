#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>

#include "base/env/process.h"
#include "base/errors.h"
#include "base/store/migrations.h"
#include "base/store/store.h"
#include "tests/support/run_record.h"
#include "tests/support/temp_dir.h"

namespace lpbench::store {
namespace {

using lpbench::testing::read_file;
using lpbench::testing::TempDir;
using lpbench::testing::write_file;

RunRecord sample_run(int64_t sweep_id, const env::ProcessIdentity& process) {
  RunRecord r = lpbench::testing::test_run_record(sweep_id, "int8-tensor");
  r.int8_backend = "cpu-exact";
  r.config_json = R"({"seed":0})";
  r.pid = process.pid;
  r.process_start = process.start;
  r.provenance.lpbench_version = "0.1.0";
  r.provenance.build_type = "Release";
  r.provenance.cpu_kernels = "AVX2 (oneDNN at most SSE41)";
  r.tokens_per_step = 512;
  return r;
}

int64_t new_sweep(Store& store) {
  return store.add_sweep({0, "2026-11-22T00:00:00.000Z", "lpbench run", "host", "0.1.0"});
}

// Sets user_version directly, as a future lpbench would.
void set_user_version(const std::string& path, int version) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, ("PRAGMA user_version = " + std::to_string(version)).c_str(), nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
}

TEST(Store, CreatesTheSchemaThroughMigrationsAndReopens) {
  TempDir dir;
  const auto path = dir / "new.db";
  {
    Store store = Store::open(path, Store::Mode::write);
    EXPECT_EQ(store.schema_version(), latest_schema_version());
    EXPECT_TRUE(store.sweeps().empty());
    new_sweep(store);
  }
  Store again = Store::open(path, Store::Mode::write);
  EXPECT_EQ(again.schema_version(), latest_schema_version());
  EXPECT_EQ(again.sweeps().size(), 1U);
  Store reader = Store::open(path, Store::Mode::read);
  EXPECT_EQ(reader.sweeps().size(), 1U);
}

TEST(Store, RecordsRunsStepsAndModulesAsTypedRows) {
  TempDir dir;
  Store store = Store::open(dir / "rows.db", Store::Mode::write);
  const int64_t sweep = new_sweep(store);
  const int64_t run = store.add_run(sample_run(sweep, env::current_process()));
  store.add_modules(run,
                    {{run, "output", "linear", false, "fprop=bf16 dgrad=bf16 wgrad=bf16", "kept"},
                     {run, "layers.0.mlp.down", "linear", true, "int8", "quantized"}});
  store.add_step(
      {run, 0, true, 6.2, 12.5, 512, 1e-4, 3.0, std::nullopt, std::nullopt, std::nullopt});
  store.add_step({run, 1, false, NAN, 11.0, 512, 2e-4, INFINITY, 1.5, 2.0, 1755.0});

  const std::vector<RunRecord> runs = store.runs(sweep);
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0].status, RunStatus::running);
  EXPECT_EQ(runs[0].int8_backend, "cpu-exact");
  EXPECT_EQ(runs[0].provenance.git_commit, "abc");
  EXPECT_FALSE(runs[0].provenance.gpu_name.has_value());
  EXPECT_EQ(runs[0].provenance.cpu_kernels, "AVX2 (oneDNN at most SSE41)");

  const std::vector<StepRecord> steps = store.steps(run);
  ASSERT_EQ(steps.size(), 2U);
  EXPECT_TRUE(steps[0].warmup);
  EXPECT_DOUBLE_EQ(steps[0].loss, 6.2);
  EXPECT_FALSE(steps[0].peak_mem_gib.has_value());
  EXPECT_TRUE(std::isnan(steps[1].loss));  // NaN is stored as NULL and read back as NaN
  EXPECT_TRUE(std::isinf(steps[1].grad_norm));
  EXPECT_DOUBLE_EQ(*steps[1].peak_mem_gib, 1.5);
  EXPECT_FALSE(steps[0].sm_clock_mhz.has_value());  // a CPU step, or no NVML
  EXPECT_DOUBLE_EQ(*steps[1].sm_clock_mhz, 1755.0);

  const std::vector<ModuleRecord> modules = store.modules(run);
  ASSERT_EQ(modules.size(), 2U);
  EXPECT_EQ(modules[0].module, "output");  // in the order the model declared them
  EXPECT_TRUE(modules[1].quantized);
}

TEST(Store, StatusTransitionsAreRecordedWithTheError) {
  TempDir dir;
  Store store = Store::open(dir / "status.db", Store::Mode::write);
  const int64_t sweep = new_sweep(store);
  for (RunStatus status : {RunStatus::ok, RunStatus::diverged, RunStatus::oom, RunStatus::failed}) {
    const int64_t run = store.add_run(sample_run(sweep, env::current_process()));
    const std::optional<std::string> error =
        status == RunStatus::ok ? std::nullopt : std::optional<std::string>("why");
    store.finish_run(run, status, error);
    const RunRecord stored = store.runs(sweep).back();
    EXPECT_EQ(stored.status, status);
    EXPECT_EQ(stored.error, error);
    EXPECT_TRUE(stored.finished_at.has_value());
  }
}

TEST(Store, ARunWhoseProcessIsGoneReadsAsInterruptedAndIsMarkedSoOnWrite) {
  TempDir dir;
  const auto path = dir / "interrupted.db";
  int64_t live = 0;
  int64_t dead = 0;
  {
    Store store = Store::open(path, Store::Mode::write);
    const int64_t sweep = new_sweep(store);
    live = store.add_run(sample_run(sweep, env::current_process()));
    // This pid, but another start time: the process that wrote the run is gone (pid reused).
    env::ProcessIdentity gone = env::current_process();
    gone.start += "0";
    dead = store.add_run(sample_run(sweep, gone));
  }
  EXPECT_TRUE(env::is_alive(env::current_process()));
  {
    Store reader = Store::open(path, Store::Mode::read);
    const auto runs = reader.runs();
    EXPECT_EQ(runs[0].status, RunStatus::running);
    EXPECT_EQ(runs[1].status, RunStatus::interrupted);  // shown so, not yet written
  }
  Store writer = Store::open(path, Store::Mode::write);  // the next write-open records it
  const auto runs = writer.runs();
  EXPECT_EQ(runs[0].id, live);
  EXPECT_EQ(runs[0].status, RunStatus::running);
  EXPECT_EQ(runs[1].id, dead);
  EXPECT_EQ(runs[1].status, RunStatus::interrupted);
  EXPECT_TRUE(runs[1].error.has_value());
  EXPECT_EQ(writer.mark_interrupted_runs(), 0);
}

TEST(Store, RefusesANewerSchemaAndLeavesTheFileUntouched) {
  TempDir dir;
  const auto path = dir / "newer.db";
  { Store::open(path, Store::Mode::write); }
  set_user_version(path, latest_schema_version() + 1);
  const std::string before = read_file(path);
  for (Store::Mode mode : {Store::Mode::write, Store::Mode::read}) {
    try {
      Store::open(path, mode);
      FAIL() << "opened a newer schema";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("newer than this lpbench"), std::string::npos);
    }
  }
  EXPECT_EQ(read_file(path), before);
  // A reader of a WAL database may leave an empty log beside it, never a written one.
  EXPECT_EQ(read_file(dir / "newer.db-wal"), "");
}

TEST(Store, RefusesAFileThatIsNotADatabase) {
  TempDir dir;
  const auto path = dir / "notes.txt";
  write_file(path, "these are my notes, not a database\n");
  EXPECT_THROW(Store::open(path, Store::Mode::write), InputError);
  EXPECT_THROW(Store::open(path, Store::Mode::read), InputError);
  EXPECT_EQ(read_file(path), "these are my notes, not a database\n");
}

TEST(Store, RefusesPathsItCannotUse) {
  TempDir dir;
  EXPECT_THROW(Store::open(dir / "missing-dir/x.db", Store::Mode::write), InputError);
  EXPECT_THROW(Store::open(dir / "absent.db", Store::Mode::read), InputError);
  EXPECT_THROW(Store::open(dir.path(), Store::Mode::write), InputError);  // a directory
  EXPECT_THROW(Store::open("", Store::Mode::write), InputError);
}

TEST(Store, AnEmptyFileIsANewDatabase) {
  TempDir dir;
  const auto path = dir / "empty.db";
  write_file(path, "");
  Store store = Store::open(path, Store::Mode::write);
  EXPECT_EQ(store.schema_version(), latest_schema_version());
}

TEST(Migrations, AreNumberedOneUpWithoutGaps) {
  int expected = 1;
  for (const Migration& m : migrations())
    EXPECT_EQ(m.version, expected++);
}

}  // namespace
}  // namespace lpbench::store

namespace lpbench::store {
namespace {

TEST(Store, KeepsEvalLossesEventsAndWhatARunMeasured) {
  lpbench::testing::TempDir dir;
  Store store = Store::open(dir / "v2.db", Store::Mode::write);
  SweepRecord sweep{0, "2026-11-22T00:00:00.000Z", "lpbench run", "host", "0.1.0", "nightly"};
  const int64_t sweep_id = store.add_sweep(sweep);
  EXPECT_EQ(store.sweep(sweep_id)->label, "nightly");
  RunRecord r = sample_run(sweep_id, env::current_process());
  r.level = "model";
  r.model = "llama2-7b";
  r.layers_run = 2;
  r.layers_published = 32;
  r.data = "synthetic";
  r.memory_estimate_gib = 12.5;
  const int64_t run = store.add_run(r);
  store.add_eval({run, 100, 2.5, 4096});
  store.add_eval({run, 200, NAN, 4096});
  store.add_event({0, run, 150, "loss_spike", "loss 9.1 > 3 × median 2.6", ""});
  store.add_event({0, run, std::nullopt, "note", "not tied to a step", "2026-01-01T00:00:00Z"});

  const RunRecord back = store.runs(sweep_id).at(0);
  EXPECT_EQ(back.level, "model");
  EXPECT_EQ(back.model, "llama2-7b");
  EXPECT_EQ(back.layers_run, 2);
  EXPECT_EQ(back.layers_published, 32);
  EXPECT_EQ(back.memory_estimate_gib, 12.5);
  const auto evals = store.evals(run);
  ASSERT_EQ(evals.size(), 2U);
  EXPECT_DOUBLE_EQ(evals[0].val_loss, 2.5);
  EXPECT_TRUE(std::isnan(evals[1].val_loss));
  const auto events = store.events(run);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].step, 150);
  EXPECT_EQ(events[0].kind, "loss_spike");
  EXPECT_FALSE(events[0].at.empty());
  EXPECT_FALSE(events[1].step.has_value());
}

// A version-1 database, as the first lpbench wrote it, is migrated and its runs keep their data.
TEST(Migrations, UpgradeAVersionOneDatabaseInPlace) {
  lpbench::testing::TempDir dir;
  const std::string path = dir / "v1.db";
  {
    Connection c(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    c.exec("BEGIN");
    c.exec(migrations().at(0).sql);
    c.exec("PRAGMA user_version = 1");
    c.exec(
        "INSERT INTO sweeps VALUES (1, 't', 'lpbench run', 'h', '0.1.0');"
        "INSERT INTO runs (id, sweep_id, workload, recipe, device, config_json, status, "
        "started_at, host, pid, process_start, git_commit, git_dirty, torch_version, "
        "lpbench_version, tokens_per_step) VALUES (1, 1, 'model:tiny', 'bf16', 'cpu', '{}', "
        "'ok', 't', 'h', 1, 's', 'c', 0, '2.11.0', '0.1.0', 512)");
    c.exec("COMMIT");
  }
  Store store = Store::open(path, Store::Mode::read);  // an older schema is migrated on open
  EXPECT_EQ(store.schema_version(), latest_schema_version());
  const RunRecord run = store.runs().at(0);
  EXPECT_EQ(run.level, "model");
  EXPECT_EQ(run.model, "tiny");
  EXPECT_EQ(run.status, RunStatus::ok);
  EXPECT_FALSE(store.sweeps().at(0).label.has_value());
}

TEST(Store, SelectsSweepsByLabelHostAndTimeAndRunsByIdAndCommit) {
  TempDir dir;
  Store store = Store::open(dir / "q.db", Store::Mode::write);
  const int64_t a = store.add_sweep({0, "2026-11-20T03:00:00.000Z", "run", "h1", "0", "nightly"});
  const int64_t b = store.add_sweep({0, "2026-11-21T03:00:00.500Z", "run", "h2", "0", "nightly"});
  const int64_t c = store.add_sweep({0, "2026-11-21T03:00:01.000Z", "run", "h1", "0", {}});
  const env::ProcessIdentity self = env::current_process();
  RunRecord first = sample_run(a, self);
  first.provenance.git_commit = "abcdef12";
  const int64_t run_a = store.add_run(first);
  RunRecord second = sample_run(c, self);
  second.provenance.git_commit = "abc%_999";  // LIKE's wildcards must match only themselves
  store.add_run(second);

  auto ids = [](const std::vector<SweepRecord>& sweeps) {
    std::vector<int64_t> out;
    for (const SweepRecord& s : sweeps)
      out.push_back(s.id);
    return out;
  };
  EXPECT_EQ(ids(store.sweeps(SweepQuery{"nightly", {}, {}})), (std::vector<int64_t>{a, b}));
  EXPECT_EQ(ids(store.sweeps(SweepQuery{"nightly", "h1", {}})), (std::vector<int64_t>{a}));
  EXPECT_EQ(ids(store.sweeps(SweepQuery{{}, {}, "2026-11-21T03:00:00"})),
            (std::vector<int64_t>{b, c}));
  EXPECT_EQ(ids(store.sweeps(SweepQuery{})), (std::vector<int64_t>{a, b, c}));

  ASSERT_TRUE(store.run(run_a).has_value());
  EXPECT_EQ(store.run(run_a)->sweep_id, a);
  EXPECT_FALSE(store.run(999).has_value());
  EXPECT_EQ(store.runs_of_commit("abcdef").size(), 1U);
  EXPECT_EQ(store.runs_of_commit("abc").size(), 2U);
  EXPECT_EQ(store.runs_of_commit("abc%").size(), 1U);
  EXPECT_TRUE(store.runs_of_commit("0000").empty());
}

TEST(Store, KeepsTheLoadAroundARunAndWhyItWasContended) {
  lpbench::testing::TempDir dir;
  Store store = Store::open(dir / "l.db", Store::Mode::write);
  const int64_t sweep = store.add_sweep({0, "2026-11-25T00:00:00.000Z", "lpbench run", "h", "0"});
  const int64_t run = store.add_run(lpbench::testing::test_run_record(sweep, "bf16"));
  store.add_load_sample({run, "start", 0.5, 2, std::nullopt, std::nullopt, std::nullopt, ""});
  store.add_load_sample({run, "end", 2.5, 2, 0.48, 97.0, 1, ""});
  store.set_contention(run, "other processes used 48 % of the 2 CPUs' time");
  const std::vector<LoadSampleRecord> samples = store.load_samples(run);
  ASSERT_EQ(samples.size(), 2U);
  EXPECT_EQ(samples[0].phase, "start");
  EXPECT_FALSE(samples[0].others_cpu_share);
  EXPECT_EQ(samples[1].phase, "end");
  EXPECT_DOUBLE_EQ(*samples[1].others_cpu_share, 0.48);
  EXPECT_EQ(samples[1].gpu_other_processes, 1);
  EXPECT_FALSE(samples[1].at.empty());
  EXPECT_EQ(store.run(run)->contention, "other processes used 48 % of the 2 CPUs' time");
}

TEST(Records, EveryCpuBackendNameIsEmulated) {
  for (const char* name : {"cpu-reference", "cpu-reference+residual", "cpu-aten-mm", "cpu-exact",
                           "fprop: cpu-reference; dgrad: cpu-reference; wgrad: bf16",
                           "fprop: bf16; dgrad: bf16; wgrad: cpu-reference"}) {
    EXPECT_TRUE(emulated_on_cpu(name)) << name;
  }
  for (const char* name : {"lpbench-wgmma", "cublaslt-int8+dequantize", "reference-on-gpu",
                           "fprop: lpbench-wgmma; dgrad: lpbench-wgmma; wgrad: bf16", ""}) {
    EXPECT_FALSE(emulated_on_cpu(name)) << name;
  }
  RunRecord run;
  EXPECT_FALSE(products_emulated(run));  // bf16: nothing quantized
  run.int8_backend = "cpu-reference+residual";
  EXPECT_TRUE(products_emulated(run));
}

}  // namespace
}  // namespace lpbench::store
