// lpbench under faults, as a nightly job meets them: killed mid-run, stopped by a signal, sharing
// its database with other writers and readers, diverging, running out of memory. Every case
// checks that the database passes SQLite's integrity check and keeps every finished step.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <random>
#include <thread>

#include "base/store/store.h"
#include "tests/support/process.h"
#include "tests/support/sqlite_query.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using std::chrono::steady_clock;

// Enough for lpbench with libtorch loaded and the tiny model, too little for a 7B layer.
constexpr int64_t kOomLimitKib = 1024 * 1024;
using testing::query_text;
using testing::run_process;
using testing::TempDir;

// One integer or text cell read straight from the file, past lpbench's store (so a test sees
// what is written, not what readers make of it). Empty when the query fails.

int64_t query_int(const std::string& db, const std::string& sql) {
  const std::string text = query_text(db, sql);
  return text.empty() ? -1 : std::stoll(text);
}

int64_t stored_steps(const std::string& db, int64_t run_id) {
  return query_int(db, "SELECT count(*) FROM steps WHERE run_id = " + std::to_string(run_id));
}

// Steps 0..n-1 each exactly once: nothing lost in the middle, nothing written twice.
void expect_contiguous_steps(const std::string& db, int64_t run_id) {
  const std::string id = std::to_string(run_id);
  const int64_t count = stored_steps(db, run_id);
  EXPECT_EQ(query_int(db, "SELECT count(DISTINCT step) FROM steps WHERE run_id = " + id), count);
  if (count > 0) {
    EXPECT_EQ(query_int(db, "SELECT max(step) FROM steps WHERE run_id = " + id), count - 1);
  }
}

// Polls `done` every 50 ms for up to `seconds`; true once it holds.
template <typename Done>
bool wait_until(Done done, int seconds) {
  const auto deadline = steady_clock::now() + std::chrono::seconds(seconds);
  while (steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::vector<std::string> long_tiny_run(const std::string& db, const std::string& recipes) {
  return {LPBENCH_BINARY, "run",       "--workload", "model:tiny", "--recipes", recipes, "--steps",
          "100000",       "--seq-len", "16",         "--device",   "cpu",       "--db",  db};
}

// Item 1: SIGKILL at a random step, three times into one database. Each time: the file passes
// integrity_check, every step seen committed before the kill is there (0..n-1, none twice), and
// the killed run reads `interrupted` (its process is gone); the next `run` writes that status.
TEST(CliFaults, SigkillAtARandomStepKeepsEveryFinishedStep) {
  TempDir dir;
  const std::string db = dir / "crash.db";
  std::mt19937 rng(std::random_device{}());
  constexpr int kKills = 3;
  for (int64_t run_id = 1; run_id <= kKills; ++run_id) {
    const int64_t kill_after = 2 + static_cast<int64_t>(rng() % 20);
    SCOPED_TRACE("run " + std::to_string(run_id) + " killed after " + std::to_string(kill_after) +
                 " stored steps");
    const pid_t pid = testing::spawn(long_tiny_run(db, "bf16"), dir / "out", dir / "err");
    int64_t seen = 0;
    ASSERT_TRUE(wait_until(
        [&] {
          seen = testing::exists(db) ? stored_steps(db, run_id) : 0;
          return seen >= kill_after;
        },
        120))
        << testing::read_file(dir / "err");
    kill(pid, SIGKILL);
    EXPECT_EQ(testing::wait_for(pid), -SIGKILL);

    EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
    EXPECT_GE(stored_steps(db, run_id), seen);
    expect_contiguous_steps(db, run_id);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM steps WHERE loss IS NULL"), 0);
    const store::Store store = store::Store::open(db, store::Store::Mode::read);
    ASSERT_EQ(store.runs().size(), static_cast<size_t>(run_id));
    for (const store::RunRecord& r : store.runs())
      EXPECT_EQ(r.status, store::RunStatus::interrupted) << "run " << r.id;
  }
  // Each later `run` recorded its predecessor as interrupted; the last one is marked by readers
  // only, until the next write.
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), kKills - 1);
  EXPECT_EQ(query_text(db, "SELECT error FROM runs WHERE id = 1"),
            "the process running it ended without recording an outcome");
  const auto list = run_process({LPBENCH_BINARY, "list", "runs", "--db", db});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  size_t shown = 0;
  for (size_t at = list.out.find("| interrupted"); at != std::string::npos;
       at = list.out.find("| interrupted", at + 1)) {
    ++shown;
  }
  EXPECT_EQ(shown, static_cast<size_t>(kKills)) << list.out;
}

// Item 1: SIGINT and SIGTERM end both runs of an interleaved sweep after the step under way,
// status interrupted with the signal named, every step kept, exit code 1.
class CliStopSignal : public ::testing::TestWithParam<int> {};

TEST_P(CliStopSignal, EndsTheRunCleanlyAfterTheCurrentStep) {
  const int signal = GetParam();
  TempDir dir;
  const std::string db = dir / "stop.db";
  const pid_t pid = testing::spawn(long_tiny_run(db, "bf16,int8-tensor"), dir / "out", dir / "err");
  ASSERT_TRUE(wait_until([&] { return testing::exists(db) && stored_steps(db, 2) >= 3; }, 120))
      << testing::read_file(dir / "err");
  const auto sent = steady_clock::now();
  kill(pid, signal);
  EXPECT_EQ(testing::wait_for(pid), 1) << testing::read_file(dir / "err");
  // One step of tiny takes milliseconds: stopping must not wait for the 100000 steps asked.
  EXPECT_LT(steady_clock::now() - sent, std::chrono::seconds(20));

  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
  for (int64_t run_id : {1, 2}) {
    const std::string id = std::to_string(run_id);
    EXPECT_EQ(query_text(db, "SELECT status FROM runs WHERE id = " + id), "interrupted");
    EXPECT_EQ(query_text(db, "SELECT error FROM runs WHERE id = " + id),
              "stopped by signal " + std::to_string(signal) + "; every finished step is kept");
    EXPECT_GE(stored_steps(db, run_id), 3);
    expect_contiguous_steps(db, run_id);
  }
  // Interleaved: the two recipes stop within one step of each other.
  EXPECT_LE(std::abs(stored_steps(db, 1) - stored_steps(db, 2)), 1);
  EXPECT_NE(testing::read_file(dir / "err").find("interrupted"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(SigintAndSigterm, CliStopSignal, ::testing::Values(SIGINT, SIGTERM),
                         [](const auto& param_info) {
                           return std::string(param_info.param == SIGINT ? "SIGINT" : "SIGTERM");
                         });

// Item 2: four processes record four sweeps into one new database at once while `report` reads
// it; every sweep finishes with all its steps, every report succeeds.
TEST(CliFaults, ConcurrentWritersAndAReaderShareOneDatabase) {
  TempDir dir;
  const std::string db = dir / "shared.db";
  constexpr int kWriters = 4;
  constexpr int kSteps = 25;
  std::vector<pid_t> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.push_back(testing::spawn(
        {LPBENCH_BINARY, "run", "--workload", "model:tiny", "--recipes", "bf16", "--steps",
         std::to_string(kSteps), "--seq-len", "16", "--seed", std::to_string(i), "--label",
         "writer" + std::to_string(i), "--device", "cpu", "--db", db},
        dir / ("out" + std::to_string(i)), dir / ("err" + std::to_string(i))));
  }
  // Reports while the writers write: each must succeed (WAL readers never wait for writers).
  int reports = 0;
  int reports_during_writes = 0;
  auto all_done = [&] {
    return query_int(db, "SELECT count(*) FROM runs WHERE status != 'running'") == kWriters;
  };
  while (reports < 40 && !(testing::exists(db) && all_done())) {
    if (testing::exists(db) && query_int(db, "SELECT count(*) FROM steps") > 0) {
      const bool writing = !all_done();
      const auto report = run_process({LPBENCH_BINARY, "report", "--db", db});
      EXPECT_EQ(report.exit_code, 0) << report.err;
      ++reports;
      if (writing) ++reports_during_writes;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  for (int i = 0; i < kWriters; ++i) {
    EXPECT_EQ(testing::wait_for(writers[i]), 0)
        << testing::read_file(dir / ("err" + std::to_string(i)));
  }
  EXPECT_GE(reports_during_writes, 1);

  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  ASSERT_EQ(store.sweeps().size(), static_cast<size_t>(kWriters));
  for (const store::RunRecord& r : store.runs()) {
    EXPECT_EQ(r.status, store::RunStatus::ok) << "run " << r.id;
    EXPECT_EQ(store.steps(r.id).size(), static_cast<size_t>(kSteps)) << "run " << r.id;
  }
}

// Item 3: a learning rate far too large drives the loss to infinity or NaN within a few steps;
// each run stops there with status diverged, the step named, the steps before it kept, and a
// non_finite event on the run. Both recipes of the sweep go the same way; exit code 1.
TEST(CliFaults, ANonFiniteLossStopsTheRunAsDiverged) {
  TempDir dir;
  const std::string db = dir / "diverge.db";
  const auto run = run_process({LPBENCH_BINARY, "run", "--workload", "model:tiny", "--recipes",
                                "bf16,int8-tensor", "--steps", "200", "--seq-len", "16", "--lr",
                                "1e6", "--device", "cpu", "--db", db});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  ASSERT_EQ(store.runs().size(), 2U);
  for (const store::RunRecord& r : store.runs()) {
    EXPECT_EQ(r.status, store::RunStatus::diverged) << r.recipe;
    ASSERT_TRUE(r.error.has_value()) << r.recipe;
    const auto steps = store.steps(r.id);
    ASSERT_FALSE(steps.empty()) << r.recipe;
    ASSERT_LT(steps.size(), 200U) << r.recipe;
    // The step that went non-finite is the last one stored, and the error names it.
    const int64_t last = steps.back().step;
    EXPECT_NE(r.error->find("non-finite"), std::string::npos) << *r.error;
    EXPECT_NE(r.error->find("at step " + std::to_string(last)), std::string::npos) << *r.error;
    EXPECT_FALSE(std::isfinite(steps.back().loss) && std::isfinite(steps.back().grad_norm))
        << r.recipe;
    for (size_t i = 0; i + 1 < steps.size(); ++i)
      EXPECT_TRUE(std::isfinite(steps[i].loss)) << r.recipe << " step " << i;
    bool non_finite_event = false;
    for (const store::EventRecord& e : store.events(r.id))
      non_finite_event |= e.kind == "non_finite" && e.step == last;
    EXPECT_TRUE(non_finite_event) << r.recipe;
  }
  const auto list = run_process({LPBENCH_BINARY, "list", "runs", "--db", db});
  EXPECT_NE(list.out.find("| diverged"), std::string::npos) << list.out;
}

// Item 4 on the CPU: a data-size limit on the process (RLIMIT_DATA, as `ulimit -d`) makes the
// allocator fail the way a full GPU does. With the memory plan off, the 7B layer runs out of
// memory while it is built; its run is recorded oom with the allocator's message, the memory is
// given back, and the sweep goes on to the next workload, which finishes every step.
TEST(CliFaults, OutOfMemoryEndsOneRunAndTheSweepGoesOn) {
  TempDir dir;
  const std::string db = dir / "oom.db";
  std::string line = "ulimit -d " + std::to_string(kOomLimitKib) + "; exec";
  for (const std::string& a : std::vector<std::string>{
           LPBENCH_BINARY, "run", "--workload", "layer:llama2-7b,model:tiny", "--recipes", "bf16",
           "--steps", "5", "--seq-len", "16", "--micro-batch", "1", "--no-memory-plan", "--device",
           "cpu", "--db", db}) {
    line += " '" + a + "'";
  }
  const auto run = run_process({"/bin/sh", "-c", line});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2U) << run.err;
  EXPECT_EQ(runs[0].workload, "layer:llama2-7b");
  EXPECT_EQ(runs[0].status, store::RunStatus::oom) << runs[0].error.value_or("");
  ASSERT_TRUE(runs[0].error.has_value());
  EXPECT_NE(runs[0].error->find("DefaultCPUAllocator: can't allocate memory"), std::string::npos)
      << *runs[0].error;
  EXPECT_EQ(runs[1].workload, "model:tiny");
  EXPECT_EQ(runs[1].status, store::RunStatus::ok) << runs[1].error.value_or("");
  EXPECT_EQ(store.steps(runs[1].id).size(), 5U);
}

}  // namespace
}  // namespace lpbench
