// The parity rule on synthetic final losses: inside BF16's band plus the tolerance, outside it,
// a diverged run, one BF16 seed (said so), and no BF16 at all.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/errors.h"
#include "reports/convergence.h"
#include "reports/frontier.h"
#include "tests/support/run_record.h"
#include "tests/support/temp_dir.h"

namespace lpbench::reports {
namespace {

SeedResult seed(const std::string& recipe, uint64_t s, double loss,
                store::RunStatus status = store::RunStatus::ok) {
  SeedResult r;
  r.recipe = recipe;
  r.seed = s;
  r.final_loss = loss;
  r.status = status;
  return r;
}

const RecipeVerdict& find(const std::vector<RecipeVerdict>& verdicts, const std::string& recipe) {
  for (const auto& v : verdicts) {
    if (v.recipe == recipe) return v;
  }
  throw std::runtime_error("no verdict for " + recipe);
}

TEST(Parity, InsideTheBandPlusToleranceIsParityAndAboveItIsNot) {
  const std::vector<SeedResult> results{
      seed("bf16", 0, 4.00),        seed("bf16", 1, 4.04),        seed("bf16", 2, 4.02),
      seed("int8-tensor", 0, 4.07), seed("int8-tensor", 1, 4.06), seed("int8-tensor", 2, 4.08),
      seed("fp8-tensor", 0, 4.10),  seed("fp8-tensor", 1, 4.12),  seed("fp8-tensor", 2, 4.14)};
  const auto verdicts = judge(results, ParityRule{0.01});
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_EQ(find(verdicts, "bf16").verdict, Parity::baseline);
  EXPECT_DOUBLE_EQ(*find(verdicts, "bf16").max, 4.04);
  // 4.07 <= 4.04 * 1.01 = 4.0804
  EXPECT_EQ(find(verdicts, "int8-tensor").verdict, Parity::parity);
  EXPECT_NEAR(*find(verdicts, "int8-tensor").gap_pct, 100.0 * (4.07 - 4.02) / 4.02, 1e-9);
  // 4.12 > 4.0804
  EXPECT_EQ(find(verdicts, "fp8-tensor").verdict, Parity::outside);
  EXPECT_FALSE(all_at_parity(verdicts));
}

TEST(Parity, ALowerLossIsParityAndADivergedSeedIsNot) {
  const std::vector<SeedResult> results{seed("bf16", 0, 4.0), seed("int8-block", 0, 3.9),
                                        seed("int8-fallback", 0, 4.0),
                                        seed("int8-fallback", 1, NAN, store::RunStatus::diverged)};
  const auto verdicts = judge(results, ParityRule{0.01});
  EXPECT_EQ(find(verdicts, "int8-block").verdict, Parity::parity);
  EXPECT_EQ(find(verdicts, "int8-fallback").verdict, Parity::diverged);
}

TEST(Parity, OneBf16SeedIsJudgedAndTheOutputSaysTheBandIsAPoint) {
  const std::vector<SeedResult> results{seed("bf16", 0, 4.0), seed("int8-tensor", 0, 4.03)};
  const ParityRule rule{0.01};
  const auto verdicts = judge(results, rule);
  EXPECT_EQ(find(verdicts, "int8-tensor").verdict, Parity::parity);
  const std::string text = render_verdicts(verdicts, rule);
  EXPECT_NE(text.find("BF16 ran 1 seed: its band is a point"), std::string::npos) << text;
  EXPECT_NE(text.find("plus 1.0 %"), std::string::npos) << text;
  EXPECT_TRUE(all_at_parity(verdicts));
}

TEST(Parity, AnInterruptedRunIsIncompleteNotJudgedOnItsEarlierLoss) {
  SeedResult stopped = seed("int8-row", 0, 2.80, store::RunStatus::interrupted);
  stopped.steps_done = 1875;
  stopped.steps_planned = 2000;
  const auto verdicts = judge({seed("bf16", 0, 2.766), stopped}, ParityRule{0.01});
  EXPECT_EQ(find(verdicts, "int8-row").verdict, Parity::incomplete);
  EXPECT_NE(find(verdicts, "int8-row").why.find("stopped at step 1875 of 2000"), std::string::npos)
      << find(verdicts, "int8-row").why;
  EXPECT_FALSE(find(verdicts, "int8-row").gap_pct.has_value());
  EXPECT_FALSE(all_at_parity(verdicts));
}

TEST(Parity, WithoutBf16ThereIsNoVerdict) {
  const auto verdicts = judge({seed("int8-tensor", 0, 4.0)}, ParityRule{});
  EXPECT_EQ(find(verdicts, "int8-tensor").verdict, Parity::no_data);
  EXPECT_FALSE(all_at_parity(verdicts));
}

// A sweep of one layer workload with a run per (recipe, median step ms), on `device`.
int64_t layer_sweep(store::Store& store, const std::vector<std::pair<std::string, double>>& runs,
                    const std::string& device = "cuda:0") {
  const int64_t sweep =
      store.add_sweep({0, "2026-11-25T03:00:00.000Z", "lpbench run", "host", "0", std::nullopt});
  std::mt19937 rng(7);
  for (const auto& [recipe, ms] : runs) {
    store::RunRecord r = lpbench::testing::test_run_record(sweep, recipe, device);
    r.workload = "layer:llama2-7b";
    r.level = "layer";
    r.model = "llama2-7b";
    r.tokens_per_step = 4096;
    if (device != "cpu") r.provenance.gpu_name = "NVIDIA H100 80GB HBM3";
    const int64_t id = store.add_run(r);
    std::normal_distribution<double> noise(ms, ms * 0.005);
    for (int step = 0; step < 16; ++step) {
      store.add_step({id, step, step < 4, 10.0, step < 4 ? 3 * ms : noise(rng), 4096, 1e-4, 1.0,
                      std::nullopt, std::nullopt});
    }
    store.finish_run(id, store::RunStatus::ok, std::nullopt);
  }
  return sweep;
}

// Speed against accuracy: each recipe's speedup from a GPU layer sweep beside its loss gap; the
// fastest recipe at parity is marked, a faster one outside parity is not.
TEST(Frontier, MarksTheFastestRecipeAtParityFromAGpuLayerSweep) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "f.db", store::Store::Mode::write);
  const int64_t sweep = layer_sweep(
      store, {{"bf16", 10.0}, {"int8-tensor", 7.0}, {"int8-row", 9.9}, {"fp8-tensor", 8.0}});
  const auto verdicts =
      judge({seed("bf16", 0, 4.00), seed("bf16", 1, 4.02), seed("int8-tensor", 0, 4.40),
             seed("int8-tensor", 1, 4.42), seed("int8-row", 0, 4.01), seed("int8-row", 1, 4.02),
             seed("fp8-tensor", 0, 4.03), seed("fp8-tensor", 1, 4.05)},
            ParityRule{0.01});
  const Frontier f = build_frontier(store, verdicts, std::nullopt);
  ASSERT_TRUE(f.source);
  EXPECT_EQ(f.source->sweep_id, sweep);
  ASSERT_EQ(f.rows.size(), 4u);
  for (const FrontierRow& row : f.rows) {
    ASSERT_TRUE(row.speedup) << row.recipe;
    EXPECT_EQ(row.fastest_at_parity, row.recipe == "fp8-tensor") << row.recipe;
  }
  const std::string md = render_frontier(f);
  EXPECT_NE(md.find("**fp8-tensor** ◆"), std::string::npos) << md;
  EXPECT_NE(md.find("the fastest recipe at parity: fp8-tensor (1.25× faster)"), std::string::npos)
      << md;
  EXPECT_NEAR(f.rows[1].speedup->ratio, 10.0 / 7.0, 0.03);  // int8-tensor: faster, not at parity
  const Chart chart = frontier_chart(f);
  ASSERT_EQ(chart.series.size(), 3u);
  EXPECT_EQ(chart.series[0].points.size(), 3u);  // at parity: bf16, int8-row, fp8-tensor
  EXPECT_EQ(chart.series[1].points.size(), 1u);  // int8-tensor
  EXPECT_EQ(chart.series[2].points.size(), 1u);  // the fastest at parity
  EXPECT_NEAR(chart.series[2].points[0].x, 1.25, 0.02);
}

TEST(Frontier, WithoutAGpuLayerSweepItSaysSoAndABadSpeedSweepIsInputError) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "f.db", store::Store::Mode::write);
  const int64_t cpu = layer_sweep(store, {{"bf16", 10.0}, {"int8-tensor", 20.0}}, "cpu");
  const auto verdicts = judge({seed("bf16", 0, 4.0), seed("int8-tensor", 0, 4.0)}, ParityRule{});
  const Frontier f = build_frontier(store, verdicts, std::nullopt);
  EXPECT_FALSE(f.source);
  EXPECT_NE(render_frontier(f).find("no layer-level bf16 run on a GPU"), std::string::npos);
  EXPECT_FALSE(has_data(frontier_chart(f)));
  EXPECT_THROW(build_frontier(store, verdicts, cpu), InputError);
  EXPECT_THROW(build_frontier(store, verdicts, cpu + 5), InputError);
}

}  // namespace
}  // namespace lpbench::reports
