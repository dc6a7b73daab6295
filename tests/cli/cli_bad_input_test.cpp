// Every bad input: one line on stderr naming the problem, exit code 2, and the database that was
// already there unchanged, byte for byte.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>

#include "base/store/migrations.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using testing::read_file;
using testing::run_process;
using testing::TempDir;

struct BadInput {
  std::string name;
  std::vector<std::string> args;  // after the binary
  std::string expected;           // part of the one-line message
};

class CliBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_ / "existing.db";
    // A real database with a sweep in it, made by lpbench itself.
    const auto made = run_process({LPBENCH_BINARY, "run", "--steps", "2", "--device", "cpu",
                                   "--seq-len", "8", "--recipes", "bf16", "--db", db_});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }

  void expect_rejected(const BadInput& input, const std::string& watched) {
    const std::string before = read_file(watched);
    std::vector<std::string> argv{LPBENCH_BINARY};
    argv.insert(argv.end(), input.args.begin(), input.args.end());
    const testing::ProcessResult result = run_process(argv);
    EXPECT_EQ(result.exit_code, 2) << input.name << ": " << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1)
        << input.name << ": " << result.err;
    EXPECT_EQ(result.err.rfind("lpbench: error: ", 0), 0U) << input.name << ": " << result.err;
    EXPECT_NE(result.err.find(input.expected), std::string::npos)
        << input.name << ": " << result.err;
    EXPECT_EQ(read_file(watched), before) << input.name << " changed " << watched;
  }

  TempDir dir_;
  std::string db_;
};

TEST_F(CliBadInput, RunArgumentsAreCheckedBeforeTheDatabaseIsTouched) {
  const std::vector<BadInput> inputs{
      {"unknown model",
       {"run", "--workload", "model:llama9", "--db", db_},
       "valid models: llama2-7b"},
      {"unknown level",
       {"run", "--workload", "kernel:tiny", "--db", db_},
       "valid levels: gemm, linear, layer, model"},
      {"too deep", {"run", "--layers", "40", "--db", db_}, "--layers must be between 1 and 4"},
      {"missing config.json",
       {"run", "--model", "no/such/config.json", "--db", db_},
       "cannot read model config"},
      {"missing data", {"run", "--data", "no-such-corpus", "--db", db_}, "no such file"},
      {"malformed workload", {"run", "--workload", "tiny", "--db", db_}, "<level>:<model>"},
      {"unknown recipe",
       {"run", "--recipes", "bf16,int4", "--db", db_},
       "valid recipes: bf16, int8-tensor"},
      {"zero steps", {"run", "--steps", "0", "--db", db_}, "--steps must be between"},
      {"negative steps", {"run", "--steps", "-3", "--db", db_}, "--steps"},
      {"overflowing steps", {"run", "--steps", "99999999999999", "--db", db_}, "--steps"},
      {"steps not a number", {"run", "--steps", "many", "--db", db_}, "--steps"},
      {"unknown flag", {"run", "--fast", "--db", db_}, "--fast"},
      {"unknown device", {"run", "--device", "tpu", "--db", db_}, "unknown --device"},
      {"no micro-batches", {"run", "--grad-accum", "0", "--db", db_}, "--grad-accum must be"},
      {"accumulation without an optimizer",
       {"run", "--workload", "layer:tiny", "--grad-accum", "2", "--db", db_},
       "--grad-accum applies to model-level workloads"},
      {"accumulation under layer sharding",
       {"run", "--device", "cpu", "--nproc-per-node", "2", "--sharding", "zero2", "--grad-accum",
        "2", "--db", db_},
       "with --grad-accum use --sharding zero1"},
  };
  for (const BadInput& input : inputs)
    expect_rejected(input, db_);
}

TEST_F(CliBadInput, DatabasePathsThatCannotBeUsed) {
  const auto notes = dir_ / "notes.txt";
  testing::write_file(notes, "not a database\n");
  expect_rejected({"not sqlite",
                   {"run", "--device", "cpu", "--steps", "1", "--db", notes},
                   "is not a SQLite database"},
                  notes);
  expect_rejected({"report on not sqlite", {"report", "--db", notes}, "is not a SQLite database"},
                  notes);
  expect_rejected({"missing directory",
                   {"run", "--device", "cpu", "--steps", "1", "--db", dir_ / "no-such-dir/x.db"},
                   "does not exist"},
                  db_);
  expect_rejected({"unwritable location",
                   {"run", "--device", "cpu", "--steps", "1", "--db", "/proc/lpbench-test.db"},
                   "/proc/lpbench-test.db"},
                  db_);
  expect_rejected(
      {"report on a missing file", {"report", "--db", dir_ / "absent.db"}, "no database at"}, db_);
  expect_rejected(
      {"report of an unknown sweep", {"report", "--db", db_, "--sweep", "99"}, "no sweep 99"}, db_);
}

TEST_F(CliBadInput, ReportCompareExportReproduceAndLabels) {
  const auto notes = dir_ / "notes.txt";
  testing::write_file(notes, "a file, not a folder\n");
  const auto tables = dir_ / "tables.json";
  testing::write_file(tables, "{ not json");
  const std::vector<BadInput> inputs{
      {"bad label", {"run", "--label", "night ly", "--db", db_}, "--label 'night ly'"},
      {"report out is a file", {"report", "--db", db_, "--out", notes}, "is not a folder"},
      {"report out parent missing",
       {"report", "--db", db_, "--out", dir_ / "no-such-dir/out"},
       "does not exist"},
      {"compare zero id",
       {"compare", "--db", db_, "--baseline", "sweep:0", "--candidate", "sweep:1"},
       "not a positive number"},
      {"compare unknown kind",
       {"compare", "--db", db_, "--baseline", "branch:main", "--candidate", "sweep:1"},
       "unknown kind 'branch'"},
      {"compare bad commit",
       {"compare", "--db", db_, "--baseline", "commit:HEAD", "--candidate", "sweep:1"},
       "hex digits"},
      {"compare bad time",
       {"compare", "--db", db_, "--baseline", "since:yesterday", "--candidate", "sweep:1"},
       "ISO 8601"},
      {"compare missing sweep",
       {"compare", "--db", db_, "--baseline", "sweep:99", "--candidate", "sweep:1"},
       "no sweep 99"},
      {"compare missing run",
       {"compare", "--db", db_, "--baseline", "run:99", "--candidate", "sweep:1"},
       "no run 99"},
      {"compare no candidate", {"compare", "--db", db_, "--baseline", "sweep:1"}, "--candidate"},
      {"compare junit folder missing",
       {"compare", "--db", db_, "--baseline", "sweep:1", "--candidate", "sweep:1", "--junit",
        dir_ / "no-such-dir/j.xml"},
       "does not exist"},
      {"export json",
       {"export", "--db", db_, "--format", "json", "--out", dir_ / "x"},
       "unknown; use csv"},
      {"export out is a file", {"export", "--db", db_, "--out", notes}, "is not a folder"},
      {"reproduce unknown table", {"reproduce", "paper9", "--db", db_}, "unknown table 'paper9'"},
      {"reproduce no table", {"reproduce", "--db", db_}, "name a table"},
      {"reproduce zero layers", {"reproduce", "int8-te", "--layers", "0", "--db", db_}, "--layers"},
      {"reproduce a kernel table",
       {"reproduce", "deepgemm", "--db", db_},
       "not an lpbench measurement"},
      {"reproduce missing tables file",
       {"reproduce", "x", "--tables", dir_ / "absent.json", "--db", db_},
       "no such file"},
      {"reproduce bad tables file",
       {"reproduce", "x", "--tables", tables, "--db", db_},
       "not valid JSON"},
      {"converge zero min steps",
       {"converge", "--judge", "--min-steps", "0", "--db", db_},
       "--min-steps 0 is not a step count"},
  };
  for (const BadInput& input : inputs)
    expect_rejected(input, db_);
  EXPECT_FALSE(testing::exists(dir_ / "x"));
}

// --cuda-graph replays one captured step: each step that the host changes from step to step, or
// that reads the GPU's results within it, is refused before anything runs.
TEST_F(CliBadInput, CudaGraphsAreRefusedWhereAReplayedStepWouldDifferFromTheStep) {
  const std::vector<std::string> layer{"run",        "--cuda-graph", "--steps", "2",
                                       "--workload", "layer:tiny",   "--db",    db_};
  auto with = [&layer](std::vector<std::string> more) {
    std::vector<std::string> args = layer;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const std::vector<BadInput> inputs{
      {"graph on the CPU", with({"--device", "cpu", "--recipes", "bf16"}),
       "this run's device is cpu"},
      {"graph of a model step",
       {"run", "--cuda-graph", "--workload", "model:tiny", "--device", "cpu", "--db", db_},
       "model:tiny is a model workload"},
      {"graph with regions", with({"--regions", "--recipes", "bf16"}), "--regions would time"},
      {"graph with diagnostics", with({"--diagnostics=2", "--recipes", "int8-tensor"}),
       "--diagnostics would time"},
      {"graph with stochastic rounding", with({"--recipes", "int8-tensor:dy-rounding=stochastic"}),
       "draws a new rounding seed on the host"},
      {"graph with fallback", with({"--recipes", "int8-fallback"}), "outlier blocks on the host"},
      {"graph of an MoE layer",
       {"run", "--cuda-graph", "--workload", "layer:mixtral-8x7b-8l", "--device", "cpu", "--db",
        db_},
       "routes its tokens to experts"},
  };
  for (const BadInput& input : inputs)
    expect_rejected(input, db_);
}

// --memory-snapshot records the CUDA caching allocator during one step that allocates: a step
// outside the run, a device without that allocator, or a replayed step is refused.
TEST_F(CliBadInput, AMemorySnapshotIsRefusedWhereThereIsNoAllocationToRecord) {
  const std::vector<BadInput> inputs{
      {"snapshot past the last step",
       {"run", "--steps", "2", "--memory-snapshot", "2", "--device", "cpu", "--db", db_},
       "--memory-snapshot must be between -1 and 1, got 2"},
      {"snapshot on the CPU",
       {"run", "--steps", "2", "--memory-snapshot", "1", "--device", "cpu", "--db", db_},
       "this run's device is cpu"},
  };
  for (const BadInput& input : inputs)
    expect_rejected(input, db_);
}

TEST_F(CliBadInput, ANewerSchemaIsRefusedAndLeftUntouched) {
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &handle), SQLITE_OK);
  const std::string pragma =
      "PRAGMA user_version = " + std::to_string(store::latest_schema_version() + 1);
  ASSERT_EQ(sqlite3_exec(handle, pragma.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(handle, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(handle);
  expect_rejected({"newer schema, run",
                   {"run", "--device", "cpu", "--steps", "1", "--db", db_},
                   "newer than this lpbench"},
                  db_);
  expect_rejected({"newer schema, report", {"report", "--db", db_}, "newer than this lpbench"},
                  db_);
}

TEST(CliHelp, HelpAndVersionExitZero) {
  EXPECT_EQ(run_process({LPBENCH_BINARY, "--help"}).exit_code, 0);
  EXPECT_EQ(run_process({LPBENCH_BINARY, "run", "--help"}).exit_code, 0);
  const auto version = run_process({LPBENCH_BINARY, "--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_FALSE(version.out.empty());
}

}  // namespace
}  // namespace lpbench
