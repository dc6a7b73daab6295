// lpbench as a user runs it: the demo's comparison end to end, and a stop by signal.
#include <gtest/gtest.h>

#include <csignal>
#include <numeric>
#include <thread>

#include "harness/store/store.h"
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
