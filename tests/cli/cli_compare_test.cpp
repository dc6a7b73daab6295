// `lpbench compare` as CI runs it: exit codes and the Markdown and JUnit files, on a history
// written through the store.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

#include "harness/store/store.h"
#include "tests/support/nightly_history.h"
#include "tests/support/process.h"
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

}  // namespace
}  // namespace lpbench
