// lpbench as a user runs it: the demo's comparison end to end, and a stop by signal.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include "base/store/store.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using testing::run_process;
using testing::TempDir;

double mean_loss(const std::vector<store::StepRecord>& steps, size_t first, size_t count) {
  double sum = 0.0;
  for (size_t i = first; i < first + count; ++i)
    sum += steps[i].loss;
  return sum / static_cast<double>(count);
}

// The acceptance test: bf16 and int8-tensor on tiny, both losses fall, and INT8's mean
// loss over the last 20 steps is within 2 % of BF16's.
TEST(CliRun, Bf16AndInt8TrainTinyAlikeAndTheReportComparesThem) {
  TempDir dir;
  const std::string db = dir / "demo.db";
  const testing::ProcessResult run = run_process({LPBENCH_BINARY, "run", "--workload", "model:tiny",
                                                  "--recipes", "bf16,int8-tensor", "--steps", "200",
                                                  "--seed", "0", "--device", "cpu", "--db", db});
  ASSERT_EQ(run.exit_code, 0) << run.err;

  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  ASSERT_EQ(store.sweeps().size(), 1U);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2U);
  std::map<std::string, double> last20;
  for (const store::RunRecord& r : runs) {
    EXPECT_EQ(r.status, store::RunStatus::ok) << r.recipe;
    const auto steps = store.steps(r.id);
    ASSERT_EQ(steps.size(), 200U) << r.recipe;
    const double first = mean_loss(steps, 0, 10);
    last20[r.recipe] = mean_loss(steps, 180, 20);
    EXPECT_GT(first, 5.5) << r.recipe;             // ln(512) = 6.24 at the start
    EXPECT_LT(last20[r.recipe], 2.5) << r.recipe;  // the chain's entropy is 1.21
    const auto modules = store.modules(r.id);
    EXPECT_FALSE(modules.empty());
  }
  const double gap = std::abs(last20["int8-tensor"] - last20["bf16"]) / last20["bf16"];
  EXPECT_LT(gap, 0.02) << "bf16 " << last20["bf16"] << ", int8 " << last20["int8-tensor"];

  const testing::ProcessResult report = run_process({LPBENCH_BINARY, "report", "--db", db});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("| int8-tensor |"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("1.00× (baseline)"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("× "), std::string::npos);
  EXPECT_NE(report.out.find(" %"), std::string::npos);  // the loss gap
  EXPECT_NE(report.out.find("emulated"), std::string::npos);

  const testing::ProcessResult list = run_process({LPBENCH_BINARY, "list", "runs", "--db", db});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("| ok "), std::string::npos) << list.out;
}

// A CPU run's losses depend on the kernels torch ran (their roundings differ): the store keeps
// which, as ATEN_CPU_CAPABILITY and ONEDNN_MAX_CPU_ISA left them.
TEST(CliRun, RecordsTheCpuKernelsTorchRanOn) {
  TempDir dir;
  const std::string db = dir / "kernels.db";
  const testing::ProcessResult run =
      run_process({"/usr/bin/env", "ATEN_CPU_CAPABILITY=default", "ONEDNN_MAX_CPU_ISA=SSE41",
                   LPBENCH_BINARY, "run", "--workload", "model:tiny", "--recipes", "bf16",
                   "--steps", "2", "--device", "cpu", "--db", db});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0].provenance.cpu_kernels, "DEFAULT (oneDNN at most SSE41)");
}

// --dry-run checks what a run would (the nightly checks every suite line with it before any runs)
// and touches nothing: no database is created, bad input still exits 2 with one line.
TEST(CliRun, DryRunChecksEverythingAndOpensNothing) {
  TempDir dir;
  const std::string db = dir / "never.db";
  const testing::ProcessResult ok =
      run_process({LPBENCH_BINARY, "run", "--workload", "model:tiny,layer:tiny", "--recipes",
                   "bf16,int8-tensor", "--steps", "5", "--device", "cpu", "--label", "nightly",
                   "--db", db, "--dry-run"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("2 workloads × 2 recipes"), std::string::npos) << ok.out;
  EXPECT_FALSE(std::filesystem::exists(db));

  const testing::ProcessResult bad = run_process({LPBENCH_BINARY, "run", "--workload", "model:nope",
                                                  "--device", "cpu", "--db", db, "--dry-run"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("nope"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(db));
  // A K block the kernels do not take: one line with the valid choices.
  const testing::ProcessResult kblock =
      run_process({LPBENCH_BINARY, "run", "--workload", "model:tiny", "--recipes",
                   "int8-block:k-block=384", "--device", "cpu", "--db", db, "--dry-run"});
  EXPECT_EQ(kblock.exit_code, 2);
  EXPECT_NE(kblock.err.find("k-block must be 128, 256, 512 or 1024"), std::string::npos)
      << kblock.err;
  EXPECT_FALSE(std::filesystem::exists(db));

  // Recipes with several modifiers in one --recipes list: each keeps its own.
  const std::vector<std::string> modified = {
      LPBENCH_BINARY,
      "run",
      "--workload",
      "model:tiny",
      "--recipes",
      "bf16,int8-tensor:dy=row,saved=int8,int8-tensor:hadamard=64,dy-rounding=stochastic",
      "--steps",
      "5",
      "--device",
      "cpu",
      "--db",
      db,
      "--dry-run"};
  std::vector<std::string> fused = modified;
  fused.insert(fused.end(), {"--fusion", "fused"});
  const testing::ProcessResult three = run_process(fused);
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_NE(three.out.find("1 workload × 3 recipes"), std::string::npos) << three.out;
  // saved=int8 lives in the fused operators: without them, one line saying what to add.
  const testing::ProcessResult unfused = run_process(modified);
  EXPECT_EQ(unfused.exit_code, 2);
  EXPECT_NE(unfused.err.find("add --fusion fused"), std::string::npos) << unfused.err;
  EXPECT_FALSE(std::filesystem::exists(db));
}

// --dry-run prints the memory plan of each layer or model workload: every recipe's planned peak
// and the largest micro-batch it fits. With --dry-run a budget may exceed this machine's memory
// (planning for a GPU); a run is still refused it. Here 8-layer llama2-7b at 16 × 4096 tokens
// against an H200's 139.8 GiB: saved=int8 keeps about half of BF16's activations a layer (the
// plan's bytes per token, 67.1 against 131.7 kB, hand-counted in memory_plan_test; the output
// layer's are the same in both), so it fits well over 1.5 times the sequences.
TEST(CliRun, DryRunPrintsEachRecipesPlannedPeakAndLargestMicroBatch) {
  TempDir dir;
  const std::string db = dir / "never.db";
  std::vector<std::string> args = {LPBENCH_BINARY,
                                   "run",
                                   "--workload",
                                   "model:llama2-7b",
                                   "--layers",
                                   "8",
                                   "--micro-batch",
                                   "16",
                                   "--seq-len",
                                   "4096",
                                   "--recipes",
                                   "bf16,int8-tensor:dy=row,saved=int8",
                                   "--fusion",
                                   "fused",
                                   "--device",
                                   "cpu",
                                   "--memory-budget-gib",
                                   "139.8",
                                   "--db",
                                   db};
  std::vector<std::string> dry = args;
  dry.push_back("--dry-run");
  const testing::ProcessResult plan = run_process(dry);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("memory plan against 139.8 GiB (--memory-budget-gib), 8 layers, "
                          "micro-batch 16 × 4096 tokens"),
            std::string::npos)
      << plan.out;
  // | recipe | planned peak GiB | activations GiB | fits | largest --micro-batch |
  const auto row = [&](const std::string& recipe) {
    const size_t at = plan.out.find("| " + recipe + " |");
    EXPECT_NE(at, std::string::npos) << plan.out;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = at + 1; i < plan.out.size() && plan.out[i] != '\n'; ++i) {
      if (plan.out[i] != '|') {
        cell += plan.out[i];
        continue;
      }
      cells.push_back(cell.substr(1, cell.size() - 2));
      cell.clear();
    }
    return cells;
  };
  const std::vector<std::string> bf16 = row("bf16");
  const std::vector<std::string> saved = row("int8-tensor:dy=row,saved=int8");
  ASSERT_EQ(bf16.size(), 5U) << plan.out;
  ASSERT_EQ(saved.size(), 5U) << plan.out;
  EXPECT_EQ(bf16[3], "yes");
  EXPECT_EQ(saved[3], "yes");
  EXPECT_GT(std::stod(bf16[1]), 1.3 * std::stod(saved[1]) - 30.0);  // peaks: state + activations
  EXPECT_GT(std::stod(bf16[2]), 1.7 * std::stod(saved[2]));         // activations alone
  const int64_t bf16_largest = std::stoll(bf16[4]);
  const int64_t saved_largest = std::stoll(saved[4]);
  EXPECT_GE(bf16_largest, 16);  // it fits 16, as planned
  EXPECT_GT(saved_largest, 3 * bf16_largest / 2);
  EXPECT_FALSE(std::filesystem::exists(db));

  // Where memory would allow more than lpbench's most tokens a step, the table says so.
  const testing::ProcessResult small = run_process(
      {LPBENCH_BINARY, "run", "--workload", "layer:tiny", "--seq-len", "4096", "--recipes", "bf16",
       "--device", "cpu", "--memory-budget-gib", "1000", "--db", db, "--dry-run"});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_NE(small.out.find("one decoder layer"), std::string::npos) << small.out;
  EXPECT_NE(small.out.find("| 4096 (the most tokens a step; memory allows more) |"),
            std::string::npos)
      << small.out;

  // A run (not a plan) is refused a budget beyond this machine, in one line.
  args[args.size() - 3] = "100000";
  const testing::ProcessResult refused = run_process(args);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--memory-budget-gib 100000.0 is more than"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(CliRun, SigtermStopsAfterTheCurrentStepAndKeepsEveryFinishedStep) {
  TempDir dir;
  const std::string db = dir / "stop.db";
  const pid_t pid = testing::spawn({LPBENCH_BINARY, "run", "--steps", "100000", "--device", "cpu",
                                    "--seq-len", "16", "--db", db},
                                   dir / "out", dir / "err");
  // Wait until both recipes have recorded a few steps.
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!testing::exists(db)) continue;
    const store::Store store = store::Store::open(db, store::Store::Mode::read);
    const auto runs = store.runs();
    if (runs.size() == 2 && store.steps(runs[1].id).size() >= 3) break;
  }
  kill(pid, SIGTERM);
  EXPECT_EQ(testing::wait_for(pid), 1) << testing::read_file(dir / "err");

  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  for (const store::RunRecord& r : store.runs()) {
    EXPECT_EQ(r.status, store::RunStatus::interrupted) << r.recipe;
    ASSERT_TRUE(r.error.has_value());
    EXPECT_NE(r.error->find("signal 15"), std::string::npos) << *r.error;
    EXPECT_GE(store.steps(r.id).size(), 3U);
  }
}

}  // namespace
}  // namespace lpbench

namespace lpbench {
namespace {

// Every level in one sweep, a pruned model among them, on prepared text data: what the report
// shows for each, and what the store keeps.
TEST(CliRun, EveryLevelInOneSweepOnPreparedText) {
  testing::TempDir dir;
  {
    std::ofstream text(dir / "text.txt");
    for (int i = 0; i < 400; ++i) {
      text << "Low precision training of language model number " << i
           << " keeps its loss close to the baseline.\n";
    }
  }
  const auto prepare =
      testing::run_process({LPBENCH_BINARY, "data", "prepare", "--text", dir / "text.txt",
                            "--vocab", "300", "--out", dir / "corpus"});
  ASSERT_EQ(prepare.exit_code, 0) << prepare.err;
  EXPECT_NE(prepare.out.find("vocabulary 300"), std::string::npos) << prepare.out;

  const std::string db = dir / "levels.db";
  const auto run = testing::run_process(
      {LPBENCH_BINARY,  "run",
       "--workload",    "gemm:tiny:down,linear:tiny:qkv,layer:tiny-moe,model:tiny",
       "--layers",      "2",
       "--steps",       "4",
       "--seq-len",     "16",
       "--micro-batch", "2",
       "--eval-every",  "2",
       "--device",      "cpu",
       "--data",        dir / "corpus",
       "--db",          db});
  // --data applies to the model level only: refused for the others, with one line.
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("--data applies to the model level"), std::string::npos) << run.err;

  const auto levels = testing::run_process(
      {LPBENCH_BINARY, "run", "--workload", "gemm:tiny:down,linear:tiny:qkv,layer:tiny-moe",
       "--steps", "4", "--seq-len", "16", "--micro-batch", "2", "--device", "cpu", "--db", db});
  ASSERT_EQ(levels.exit_code, 0) << levels.err;
  const auto model = testing::run_process(
      {LPBENCH_BINARY, "run", "--workload", "model:tiny", "--layers",      "2",
       "--steps",      "4",   "--seq-len",  "16",         "--micro-batch", "2",
       "--eval-every", "2",   "--device",   "cpu",        "--data",        dir / "corpus",
       "--db",         db});
  ASSERT_EQ(model.exit_code, 0) << model.err;

  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 8U);
  const store::RunRecord& pruned = runs.back();
  EXPECT_EQ(pruned.level, "model");
  EXPECT_EQ(pruned.layers_run, 2);
  EXPECT_EQ(pruned.layers_published, 4);
  EXPECT_NE(pruned.data->find("corpus/tokens.bin"), std::string::npos) << *pruned.data;
  EXPECT_EQ(store.evals(pruned.id).size(), 2U);  // after steps 2 and 4
  EXPECT_GT(*pruned.memory_estimate_gib, 0.0);
  // The MoE layer recorded each expert's share of the tokens, summing to one.
  const auto shares = store.metrics(runs[4].id, "moe.");
  ASSERT_FALSE(shares.empty());
  double first_step_sum = 0.0;
  for (const auto& m : shares) {
    if (m.step == shares.front().step) first_step_sum += m.value;
  }
  EXPECT_NEAR(first_step_sum, 1.0, 1e-9);

  const auto report = testing::run_process({LPBENCH_BINARY, "report", "--db", db});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("model:tiny (2 of 4 layers)"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("gemm:tiny:down"), std::string::npos) << report.out;
}

}  // namespace
}  // namespace lpbench
