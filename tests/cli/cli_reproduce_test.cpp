// `lpbench reproduce`: every published table's dry run, and a table run through the runner.
#include <gtest/gtest.h>

#include "base/store/store.h"
#include "tests/support/process.h"
#include "tests/support/programs.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using testing::exists;
using testing::run_process;
using testing::TempDir;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CliReproduce, ListShowsEveryTable) {
  const auto list = run_process({LPBENCH_BINARY, "reproduce", "--list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const char* id :
       {"int8-te", "jetfire", "fallback", "fp8-recipe", "torchao-float8", "deepgemm"}) {
    EXPECT_TRUE(has(list.out, "| " + std::string(id) + " ")) << id << "\n" << list.out;
  }
}

// Each table's dry run names its source, every row with its published figure, says for each
// row what would run or why it cannot, ends with the table's note, and touches no database.
TEST(CliReproduce, DryRunOfEveryTable) {
  TempDir dir;
  const std::string db = dir / "never.db";
  struct Expected {
    std::string id;
    std::vector<std::string> rows;
  };
  const std::vector<Expected> tables{
      {"int8-te",
       {"| Llama2-7B ", "| Llama2-13B ", "| Llama3.1-8B ", "| Qwen3-4B ", "| Qwen3-8B ",
        "| Mixtral-8x7B-8L ", "1.21x", "1.16x", "1.17x", "1.07x", "1.20x", "1.12x"}},
      {"jetfire", {"1.42x vs FP16", "1.49x vs FP16", "not an lpbench measurement"}},
      {"fallback", {"1.57x", "not an lpbench measurement"}},
      {"fp8-recipe", {"-22 %", "-14 %", "+19 %"}},
      {"torchao-float8", {"| tensorwise ", "| rowwise ", "+25 % tokens/s", "+10 % tokens/s"}},
      {"deepgemm", {"up to 1550 TFLOP/s", "not an lpbench measurement"}},
  };
  for (const Expected& t : tables) {
    const auto dry = run_process(
        {LPBENCH_BINARY, "reproduce", t.id, "--dry-run", "--db", db, "--device", "cpu"});
    ASSERT_EQ(dry.exit_code, 0) << t.id << ": " << dry.err;
    EXPECT_TRUE(has(dry.out, "Table " + t.id + ":")) << dry.out;
    EXPECT_TRUE(has(dry.out, "Source: ")) << dry.out;
    EXPECT_TRUE(has(dry.out, "\nNote: ")) << dry.out;
    for (const std::string& row : t.rows)
      EXPECT_TRUE(has(dry.out, row)) << t.id << ": " << row << "\n" << dry.out;
    // Either it would run, with an estimate and its basis, or it says why not.
    EXPECT_TRUE(has(dry.out, "Estimated time: ") || has(dry.out, "Nothing would run")) << dry.out;
    if (has(dry.out, "Estimated time: ")) {
      EXPECT_TRUE(has(dry.out, "Basis: model FLOPs per token")) << dry.out;
    }
    EXPECT_FALSE(exists(db)) << t.id;
  }
  // The seed table: a row runs when this build has its model, and says so when not.
  const auto seed =
      run_process({LPBENCH_BINARY, "reproduce", "int8-te", "--dry-run", "--device", "cpu"});
  for (const char* model :
       {"llama2-7b", "llama2-13b", "llama3.1-8b", "qwen3-4b", "qwen3-8b", "mixtral-8x7b-8l"}) {
    EXPECT_TRUE(has(seed.out, std::string("model:") + model)) << model << "\n" << seed.out;
  }
}

// --full-depth: every model row at its published depth, or the memory plan's reason why one
// device of this size cannot hold it; never a pruned depth.
TEST(CliReproduce, FullDepthRunsEachRowAtItsPublishedDepthOrSaysWhyNot) {
  const auto dry = run_process(
      {LPBENCH_BINARY, "reproduce", "int8-te", "--full-depth", "--dry-run", "--device", "cpu"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  for (const char* pruned : {"| 2 of 32", "| 2 of 40", "| 2 of 36", "| 2 of 8"})
    EXPECT_FALSE(has(dry.out, pruned)) << pruned << "\n" << dry.out;
  for (const char* model : {"llama2-7b", "llama2-13b", "qwen3-4b"}) {
    const size_t at = dry.out.find(std::string("model:") + model);
    ASSERT_NE(at, std::string::npos) << model << "\n" << dry.out;
    const std::string row = dry.out.substr(at, dry.out.find('\n', at) - at);
    EXPECT_TRUE(has(row, "needs about") || has(row, " of 32") || has(row, " of 40") ||
                has(row, " of 36"))
        << row;
  }
}

// A table of the tiny model, from a file: the dry run estimates, the run goes through the same
// runner as `lpbench run` and prints published, measured, their ratio and what differs.
TEST(CliReproduce, ATableFromAFileRunsThroughTheRunner) {
  const testing::ScopedEnv one_thread("OMP_NUM_THREADS", "1");  // see cli_report_test.cpp
  TempDir dir;
  const std::string tables = dir / "tables.json";
  testing::write_file(tables, R"({"format": 1, "tables": [{
    "id": "smoke", "title": "A test table", "source": "this test", "figure": "speedup",
    "reproduction": "end-to-end", "baseline_recipe": "bf16",
    "conditions": {"hardware": "a test machine", "seq_len": "2048"},
    "note": "Not a published figure: it only exercises the reproduction path.",
    "rows": [{"label": "tiny", "workload": "model:tiny", "recipe": "int8-tensor", "layers": 4,
              "metric": "speedup", "published": 1.5, "published_text": "1.50x"}]}]})");
  const std::string db = dir / "r.db";
  const std::vector<std::string> common{
      LPBENCH_BINARY, "reproduce", "smoke", "--tables", tables, "--db",     db,   "--steps",
      "12",           "--seq-len", "16",    "--layers", "2",    "--device", "cpu"};
  std::vector<std::string> dry_args = common;
  dry_args.push_back("--dry-run");
  const auto dry = run_process(dry_args);
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_TRUE(has(dry.out, "Would run 1 of 1 rows on cpu, 12 steps per recipe")) << dry.out;
  EXPECT_TRUE(has(dry.out, " 2 of 4 |")) << dry.out;
  EXPECT_TRUE(has(dry.out, "Estimated time: ")) << dry.out;
  EXPECT_TRUE(has(dry.out, "GFLOP/s")) << dry.out;
  EXPECT_FALSE(exists(db));

  const auto run = run_process(common);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(has(run.out, "| tiny ")) << run.out;
  EXPECT_TRUE(has(run.out, "1.50x")) << run.out;
  EXPECT_TRUE(has(run.out, "x (")) << run.out;  // measured, with its range
  EXPECT_TRUE(has(run.out, "depth 2 of 4 layers")) << run.out;
  EXPECT_TRUE(has(run.out, "seq len 16 (published: 2048)")) << run.out;
  EXPECT_TRUE(has(run.out, "(published: a test machine)")) << run.out;
  // The CPU emulated the INT8 products: the row says so beside the device.
  EXPECT_TRUE(has(run.out, "device CPU (quantized products emulated)")) << run.out;

  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  ASSERT_EQ(store.sweeps().size(), 1U);
  EXPECT_EQ(store.sweeps()[0].label, std::optional<std::string>("reproduce:smoke"));
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2U);
  EXPECT_EQ(runs[0].recipe, "bf16");
  EXPECT_EQ(runs[1].recipe, "int8-tensor");
  EXPECT_EQ(runs[0].layers_run, std::optional<int64_t>(2));
  EXPECT_EQ(store.steps(runs[1].id).size(), 12U);
}

// A row one device cannot hold runs data parallel where --nproc-per-node allows: planned for a
// budget between what one process needs and what two sharded ranks need (both read from the
// dry run's refusal at a budget neither fits), it runs as two Gloo ranks through `lpbench run`,
// records its sweep under the table's label, and the table says how it ran.
TEST(CliReproduce, ARowOneDeviceCannotHoldRunsOverSeveralRanks) {
  const testing::ScopedEnv one_thread("OMP_NUM_THREADS", "1");
  TempDir dir;
  const std::string tables = dir / "tables.json";
  testing::write_file(tables, R"({"format": 1, "tables": [{
    "id": "smoke", "title": "A test table", "source": "this test", "figure": "speedup",
    "reproduction": "end-to-end", "baseline_recipe": "bf16",
    "conditions": {"hardware": "a test machine", "framework": "a test framework"},
    "note": "Not a published figure: it only exercises the reproduction path.",
    "rows": [{"label": "tiny", "workload": "model:tiny", "recipe": "int8-tensor", "layers": 4,
              "metric": "speedup", "published": 1.5, "published_text": "1.50x"}]}]})");
  const std::string db = dir / "r.db";
  auto args = [&](const std::string& budget, bool dry) {
    std::vector<std::string> a{LPBENCH_BINARY,
                               "reproduce",
                               "smoke",
                               "--tables",
                               tables,
                               "--db",
                               db,
                               "--steps",
                               "6",
                               "--seq-len",
                               "16",
                               "--micro-batch",
                               "2",
                               "--full-depth",
                               "--device",
                               "cpu",
                               "--nproc-per-node",
                               "2",
                               "--memory-budget-gib",
                               budget};
    if (dry) a.push_back("--dry-run");
    return a;
  };
  const auto refused = run_process(args("0.5", true));
  ASSERT_EQ(refused.exit_code, 0) << refused.err;
  EXPECT_TRUE(has(refused.out, "Nothing would run")) << refused.out;
  std::vector<double> needs;
  for (size_t at = refused.out.find("needs about "); at != std::string::npos;
       at = refused.out.find("needs about ", at + 1)) {
    needs.push_back(std::stod(refused.out.substr(at + 12)));
  }
  ASSERT_EQ(needs.size(), 2U) << refused.out;  // one process, then two ranks
  ASSERT_GT(needs[0], needs[1]) << refused.out;
  const std::string budget = std::to_string((needs[0] + needs[1]) / 2);

  const auto dry = run_process(args(budget, true));
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_TRUE(has(dry.out, "4 of 4, checkpointed, 2 ranks (zero3)")) << dry.out;
  EXPECT_FALSE(exists(db));

  const auto run = run_process(args(budget, false));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(has(run.out, "| tiny ")) << run.out;
  EXPECT_TRUE(has(run.out, "x (")) << run.out;  // measured, with its range
  EXPECT_TRUE(has(run.out, "lpbench's loop on 2 ranks (zero3) (published: a test framework)"))
      << run.out;
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  ASSERT_EQ(store.sweeps().size(), 1U);
  EXPECT_EQ(store.sweeps()[0].label, std::optional<std::string>("reproduce:smoke"));
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2U);
  for (const auto& r : runs) {
    EXPECT_EQ(r.world_size, 2);
    EXPECT_EQ(r.sharding.value_or(""), "zero3 (gloo)");
    EXPECT_EQ(r.layers_run, std::optional<int64_t>(4));
    EXPECT_EQ(store.steps(r.id).size(), 6U);
  }
}

}  // namespace
}  // namespace lpbench
