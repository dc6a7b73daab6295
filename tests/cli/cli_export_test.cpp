// `lpbench export`: the CSV files read back to the stored values.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "base/store/store.h"
#include "tests/support/csv.h"
#include "tests/support/nightly_history.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using testing::add_nightly;
using testing::read_file;
using testing::run_process;
using testing::TempDir;

TEST(CliExport, CsvReadsBackToTheStoredValues) {
  TempDir dir;
  const std::string db = dir / "e.db";
  std::mt19937 rng(2);
  {
    store::Store store = store::Store::open(db, store::Store::Mode::write);
    add_nightly(store, 20.0, 1, rng, "lpbench run --note 'a, \"quoted\" word'\nsecond line");
  }
  const std::string out = dir / "csv";
  const auto exported =
      run_process({LPBENCH_BINARY, "export", "--db", db, "--format", "csv", "--out", out});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;

  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto sweeps = testing::parse_csv(read_file(out + "/sweeps.csv"));
  ASSERT_EQ(sweeps.size(), 2U);
  EXPECT_EQ(sweeps[0][5], "command_line");
  EXPECT_EQ(sweeps[1][5], store.sweeps()[0].command_line);
  EXPECT_EQ(sweeps[1][2], "nightly");

  const auto runs = testing::parse_csv(read_file(out + "/runs.csv"));
  ASSERT_EQ(runs.size(), 2U);
  const store::RunRecord run = store.runs()[0];
  EXPECT_EQ(runs[0][8], "status");
  EXPECT_EQ(runs[1][8], "ok");
  EXPECT_EQ(runs[1][13], run.provenance.git_commit);
  EXPECT_EQ(runs[1][7], "");  // no INT8 backend: NULL
  EXPECT_EQ(runs[1].back(), run.config_json);

  const auto steps = testing::parse_csv(read_file(out + "/steps.csv"));
  const auto stored = store.steps(run.id);
  ASSERT_EQ(steps.size(), stored.size() + 1);
  for (size_t i = 0; i < stored.size(); ++i) {
    const auto& row = steps[i + 1];
    ASSERT_EQ(row.size(), 11U);
    EXPECT_EQ(std::stoll(row[1]), stored[i].step);
    EXPECT_EQ(row[2], stored[i].warmup ? "1" : "0");
    if (std::isnan(stored[i].loss)) {
      EXPECT_EQ(row[3], "");
    } else {
      EXPECT_EQ(std::strtod(row[3].c_str(), nullptr), stored[i].loss);  // exactly
    }
    EXPECT_EQ(std::strtod(row[4].c_str(), nullptr), stored[i].step_ms);
    EXPECT_EQ(std::strtod(row[6].c_str(), nullptr), stored[i].lr);
    EXPECT_EQ(row[8], "");   // no peak memory on the CPU
    EXPECT_EQ(row[10], "");  // nor an SM clock
  }
  const auto evals = testing::parse_csv(read_file(out + "/evals.csv"));
  ASSERT_EQ(evals.size(), 2U);
  EXPECT_EQ(std::strtod(evals[1][2].c_str(), nullptr), 2.625);
}

}  // namespace
}  // namespace lpbench
