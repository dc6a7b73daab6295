#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

#include "harness/env/process.h"
#include "harness/store/store.h"
#include "reports/run_summary.h"
#include "reports/sweep_report.h"
#include "reports/text_table.h"
#include "tests/support/run_record.h"
#include "tests/support/temp_dir.h"

namespace lpbench::reports {
namespace {

timing::Summary spread(double p10, double median, double p90) {
  timing::Summary s;
  s.count = 10;
  s.p10 = p10;
  s.median = median;
  s.p90 = p90;
  return s;
}

TEST(CompareSpread, ClaimsADifferenceOnlyBeyondTheSpread) {
  const timing::Summary base = spread(9.0, 10.0, 11.0);
  EXPECT_EQ(compare_spread(spread(7.0, 8.0, 8.9), base), SpeedVerdict::faster);
  EXPECT_EQ(compare_spread(spread(11.1, 12.0, 13.0), base), SpeedVerdict::slower);
  EXPECT_EQ(compare_spread(spread(8.0, 9.5, 10.0), base), SpeedVerdict::same);
}

std::vector<store::StepRecord> losses(std::initializer_list<double> values) {
  std::vector<store::StepRecord> steps;
  int64_t i = 0;
  for (double v : values) {
    store::StepRecord s;
    s.step = i++;
    s.loss = v;
    steps.push_back(s);
  }
  return steps;
}

TEST(FinalLoss, AveragesTheLastTenthAndKeepsNonFiniteVisible) {
  EXPECT_DOUBLE_EQ(
      *final_loss(losses({9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 2, 4}), 0.1), 3.0);
  EXPECT_DOUBLE_EQ(*final_loss(losses({5, 4}), 0.1), 4.0);  // at least one step
  EXPECT_TRUE(std::isnan(*final_loss(losses({5, NAN}), 0.1)));
  EXPECT_FALSE(final_loss({}, 0.1).has_value());
}

TEST(TextTable, PadsColumnsAndAlignsNumbersRight) {
  TextTable table({{"name"}, {"ms", TextTable::Align::right}});
  table.add_row({"bf16", "1.5"});
  table.add_row({"int8-tensor", "12.25"});
  EXPECT_EQ(table.markdown(),
            "| name        |    ms |\n"
            "| :---------- | ----: |\n"
            "| bf16        |   1.5 |\n"
            "| int8-tensor | 12.25 |\n");
  EXPECT_THROW(table.add_row({"only one cell"}), std::invalid_argument);
}

// A sweep with known step times and losses, through the store, into the rendered table.
TEST(SweepReport, ShowsTheStoredNumbersWithSpeedupAndLossGap) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "r.db", store::Store::Mode::write);
  const int64_t sweep = store.add_sweep({0, "2026-11-22T00:00:00.000Z", "lpbench run", "h", "0"});
  auto add_run = [&](const std::string& recipe, double ms, double loss) {
    store::RunRecord r = lpbench::testing::test_run_record(sweep, recipe);
    r.level = "model";
    if (recipe != "bf16") r.int8_backend = "cpu-exact";
    r.tokens_per_step = 1000;
    const int64_t id = store.add_run(r);
    for (int64_t step = 0; step < 20; ++step) {
      // Two warm-up steps far off, then a tight spread around `ms`.
      const double t = step < 2 ? 100 * ms : ms + 0.01 * static_cast<double>(step % 3);
      store.add_step({id, step, step < 2, loss, t, 1000, 1e-3, 1.0, std::nullopt, std::nullopt});
    }
    store.finish_run(id, store::RunStatus::ok, std::nullopt);
  };
  add_run("bf16", 10.0, 2.0);
  add_run("int8-tensor", 8.0, 2.02);

  const std::string text = render_sweep_markdown(build_sweep_report(store, *store.sweep(sweep)));
  EXPECT_NE(text.find("10.01 (10.00–10.02)"), std::string::npos) << text;  // warm-up left out
  EXPECT_NE(text.find("1.25× faster"), std::string::npos) << text;
  EXPECT_NE(text.find("+1.00 %"), std::string::npos) << text;
  EXPECT_NE(text.find("99900"), std::string::npos) << text;  // tokens/s of bf16: 1000 / 10.01 ms
  EXPECT_NE(text.find("cpu †"), std::string::npos) << text;
  EXPECT_NE(text.find("emulated"), std::string::npos) << text;
  // The CPU reference's runs carry the mark, not a backend note.
  EXPECT_EQ(text.find("Quantized GEMMs ran on"), std::string::npos) << text;
}

TEST(SpeedupText, NeverPrintsOnePointZeroBesideFasterOrSlower) {
  EXPECT_EQ(speedup_text(1.25, SpeedVerdict::faster), "1.25× faster");
  EXPECT_EQ(speedup_text(0.85, SpeedVerdict::slower), "0.85× slower");
  EXPECT_EQ(speedup_text(0.9964, SpeedVerdict::slower), "0.996× slower");
  EXPECT_EQ(speedup_text(1.0021, SpeedVerdict::faster), "1.002× faster");
  EXPECT_EQ(speedup_text(0.998, SpeedVerdict::same), "1.00× same");
}

TEST(SweepReport, SaysWhereEachRunsInt8ProductsRan) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "r.db", store::Store::Mode::write);
  const int64_t sweep = store.add_sweep({0, "2026-11-22T00:00:00.000Z", "lpbench run", "h", "0"});
  auto add_run = [&](const std::string& recipe, std::optional<std::string> backend) {
    store::RunRecord r = lpbench::testing::test_run_record(sweep, recipe, "cuda:0");
    r.workload = "layer:tiny";
    r.level = "layer";
    r.int8_backend = std::move(backend);
    store.finish_run(store.add_run(r), store::RunStatus::ok, std::nullopt);
  };
  add_run("bf16", std::nullopt);
  add_run("int8-tensor", "lpbench-wgmma");
  add_run("int8-row", "lpbench-wgmma");
  add_run("int8-block", "lpbench-mma");
  const std::string text = render_sweep_markdown(build_sweep_report(store, *store.sweep(sweep)));
  EXPECT_NE(text.find("Quantized GEMMs ran on: lpbench-wgmma (runs 2, 3); lpbench-mma (run 4)."),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace lpbench::reports
