// `lpbench compare` as CI runs it: exit codes and the Markdown and JUnit files, on a history
// written through the store.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "base/store/store.h"
#include "tests/support/nightly_history.h"
#include "tests/support/process.h"
#include "tests/support/run_record.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using testing::add_nightly;
using testing::read_file;
using testing::run_process;
using testing::TempDir;

TEST(CliCompare, ExitCodesAndFilesForARegressionSameAndNoHistory) {
  TempDir dir;
  const std::string db = dir / "c.db";
  std::mt19937 rng(1);
  int64_t regressed = 0;
  int64_t same = 0;
  {
    store::Store store = store::Store::open(db, store::Store::Mode::write);
    for (int day = 1; day <= 4; ++day)
      add_nightly(store, 50.0, day, rng);
    same = add_nightly(store, 50.0, 5, rng);
    regressed = add_nightly(store, 60.0, 6, rng);
  }
  const std::string junit = dir / "compare.xml";
  const std::string markdown = dir / "compare.md";
  const auto slow =
      run_process({LPBENCH_BINARY, "compare", "--db", db, "--baseline", "nightly:4", "--candidate",
                   fmt::format("sweep:{}", regressed), "--junit", junit, "--markdown", markdown});
  EXPECT_EQ(slow.exit_code, 1) << slow.out << slow.err;
  EXPECT_NE(slow.out.find("**SLOWER**"), std::string::npos) << slow.out;
  EXPECT_EQ(read_file(markdown), slow.out);
  const std::string xml = read_file(junit);
  EXPECT_EQ(xml.rfind("<?xml", 0), 0U) << xml;
  EXPECT_NE(xml.find("<failure"), std::string::npos) << xml;

  // The nights before the regression, against the one before them.
  const auto unchanged =
      run_process({LPBENCH_BINARY, "compare", "--db", db, "--baseline", "sweep:1,2,3,4",
                   "--candidate", fmt::format("sweep:{}", same)});
  EXPECT_EQ(unchanged.exit_code, 0) << unchanged.out << unchanged.err;
  EXPECT_NE(unchanged.out.find("NO REGRESSION"), std::string::npos) << unchanged.out;

  const auto no_history = run_process({LPBENCH_BINARY, "compare", "--db", db, "--baseline",
                                       "commit:ffff", "--candidate", "sweep:1"});
  EXPECT_EQ(no_history.exit_code, 3) << no_history.out << no_history.err;
  EXPECT_NE(no_history.out.find("UNSURE"), std::string::npos) << no_history.out;
}

// Two single runs of different workloads: no verdict, one line saying why, exit 2 and the
// database untouched; --allow-mismatch judges them with a warning in the verdict.
TEST(CliCompare, UnlikeRunsAreRefusedWithExitTwoUnlessAllowed) {
  TempDir dir;
  const std::string db = dir / "c.db";
  {
    store::Store store = store::Store::open(db, store::Store::Mode::write);
    const int64_t sweep = store.add_sweep({0, "2026-11-25T03:00:00.000Z", "lpbench run", "h", "0"});
    for (const char* workload : {"model:tiny", "layer:tiny"}) {
      store::RunRecord r = testing::test_run_record(sweep, "bf16");
      r.workload = workload;
      r.tokens_per_step = 128;
      const int64_t run = store.add_run(r);
      for (int step = 0; step < 12; ++step)
        store.add_step({run, step, step < 2, 3.0, 10.0 + step % 3, 128, 1e-3, 0.5, {}, {}, {}});
      store.finish_run(run, store::RunStatus::ok, std::nullopt);
    }
  }
  const std::string before = testing::read_file(db);
  const auto refused = run_process(
      {LPBENCH_BINARY, "compare", "--db", db, "--baseline", "run:1", "--candidate", "run:2"});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_NE(refused.err.find("workload layer:tiny against model:tiny"), std::string::npos)
      << refused.err;
  EXPECT_EQ(testing::read_file(db), before);
  const auto allowed = run_process({LPBENCH_BINARY, "compare", "--db", db, "--baseline", "run:1",
                                    "--candidate", "run:2", "--allow-mismatch"});
  EXPECT_NE(allowed.exit_code, 2) << allowed.err;
  EXPECT_NE(allowed.out.find("**WARNING** (--allow-mismatch)"), std::string::npos) << allowed.out;
}

}  // namespace
}  // namespace lpbench
