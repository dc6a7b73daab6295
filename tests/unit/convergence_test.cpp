// The parity rule on synthetic final losses: inside BF16's band plus the tolerance, outside it,
// a diverged run, one BF16 seed (said so), and no BF16 at all.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "base/errors.h"
#include "reports/convergence.h"
#include "reports/frontier.h"
#include "tests/support/run_record.h"
#include "tests/support/temp_dir.h"

namespace lpbench::reports {
namespace {

SeedResult seed(const std::string& recipe, uint64_t s, double loss,
                store::RunStatus status = store::RunStatus::ok, int64_t steps = 2000) {
  SeedResult r;
  r.recipe = recipe;
  r.seed = s;
  r.final_loss = loss;
  r.status = status;
  r.steps_done = r.steps_planned = steps;
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

// A benchmark's few steps are no convergence verdict: the gap is shown, the verdict is "too
// short", whether the recipe's runs or BF16's are the short ones.
TEST(Parity, RunsShorterThanTheMinimumAreTooShortWithTheirGapShown) {
  const auto ok = store::RunStatus::ok;
  const ParityRule rule{0.01, 100};
  const auto verdicts =
      judge({seed("bf16", 0, 10.81, ok, 10), seed("int8-tensor", 0, 10.83, ok, 10)}, rule);
  EXPECT_EQ(find(verdicts, "bf16").verdict, Parity::too_short);
  const RecipeVerdict& int8 = find(verdicts, "int8-tensor");
  EXPECT_EQ(int8.verdict, Parity::too_short);
  ASSERT_TRUE(int8.gap_pct.has_value());
  EXPECT_NEAR(*int8.gap_pct, 100.0 * 0.02 / 10.81, 1e-9);
  EXPECT_NE(int8.why.find("ran 10 steps; a verdict needs 100 or more"), std::string::npos)
      << int8.why;
  EXPECT_FALSE(all_at_parity(verdicts));

  // BF16 long enough, one of the recipe's two seeds short; BF16 short, the recipe long enough.
  const auto mixed = judge(
      {seed("bf16", 0, 4.0), seed("int8-row", 0, 4.0), seed("int8-row", 1, 4.0, ok, 99)}, rule);
  EXPECT_EQ(find(mixed, "bf16").verdict, Parity::baseline);
  EXPECT_EQ(find(mixed, "int8-row").verdict, Parity::too_short);
  EXPECT_NE(find(mixed, "int8-row").why.find("int8-row ran 99 steps"), std::string::npos);
  const auto short_base = judge({seed("bf16", 0, 4.0, ok, 50), seed("int8-row", 0, 4.0)}, rule);
  EXPECT_EQ(find(short_base, "int8-row").verdict, Parity::too_short);
  EXPECT_NE(find(short_base, "int8-row").why.find("bf16 ran 50 steps"), std::string::npos);
  // At the minimum it is judged.
  const auto at_min =
      judge({seed("bf16", 0, 4.0, ok, 100), seed("int8-row", 0, 4.0, ok, 100)}, rule);
  EXPECT_EQ(find(at_min, "int8-row").verdict, Parity::parity);
  EXPECT_NE(render_verdicts(verdicts, rule).find("fewer than 100 steps are too short"),
            std::string::npos);
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
                      std::nullopt, std::nullopt, std::nullopt});
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
  // Its gaps are the validation loss's, and it says so beside a sweep table's training-loss gap.
  EXPECT_NE(md.find("| val loss gap vs bf16 |"), std::string::npos) << md;
  EXPECT_NE(md.find("final validation loss against BF16's"), std::string::npos) << md;
  const Chart chart = frontier_chart(f);
  ASSERT_EQ(chart.series.size(), 3u);
  EXPECT_EQ(chart.series[0].points.size(), 3u);  // at parity: bf16, int8-row, fp8-tensor
  EXPECT_EQ(chart.series[1].points.size(), 1u);  // int8-tensor
  EXPECT_EQ(chart.series[2].points.size(), 1u);  // the fastest at parity
  EXPECT_NEAR(chart.series[2].points[0].x, 1.25, 0.02);
}

// Without a GPU layer sweep there are no speedups, and the table still says which loss its gaps
// are of: the demo's report printed a sweep table's training-loss gap (+0.18 %) above this one's
// validation-loss gap (+0.10 %), both headed "loss gap vs bf16", and nothing said why they differ.
TEST(Frontier, SaysWhichLossItsGapsAreOfWithoutSpeedups) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "f.db", store::Store::Mode::write);
  layer_sweep(store, {{"bf16", 10.0}, {"int8-tensor", 7.0}}, "cpu");
  const auto verdicts =
      judge({seed("bf16", 0, 4.00), seed("int8-tensor", 0, 4.01)}, ParityRule{0.01});
  const Frontier f = build_frontier(store, verdicts, std::nullopt);
  EXPECT_FALSE(f.source);
  const std::string md = render_frontier(f);
  EXPECT_NE(md.find("no layer-level bf16 run on a GPU"), std::string::npos) << md;
  EXPECT_NE(md.find("final validation loss against BF16's"), std::string::npos) << md;
  EXPECT_NE(md.find("| val loss gap vs bf16 |"), std::string::npos) << md;
}

// A convergence sweep: model:small runs with a validation loss, one per (recipe, seed, loss).
int64_t convergence_sweep(store::Store& store,
                          const std::vector<std::tuple<std::string, int, double>>& runs,
                          const std::string& label, int steps = 200) {
  const int64_t sweep =
      store.add_sweep({0, "2026-11-25T04:00:00.000Z", "lpbench converge", "host", "0", label});
  for (const auto& [recipe, seed_value, loss] : runs) {
    store::RunRecord r = lpbench::testing::test_run_record(sweep, recipe, "cuda:0");
    r.workload = "model:small";
    r.level = "model";
    r.config_json = fmt::format(R"({{"training":{{"seed":{},"steps":{}}}}})", seed_value, steps);
    const int64_t id = store.add_run(r);
    for (int step = 0; step < steps; ++step)
      store.add_step(
          {id, step, false, loss, 5.0, 512, 1e-3, 1.0, std::nullopt, std::nullopt, std::nullopt});
    store.add_eval({id, steps - 1, loss, 1024});
    store.finish_run(id, store::RunStatus::ok, std::nullopt);
  }
  return sweep;
}

// The report's frontier: the convergence runs among the chosen sweeps, one table a label and
// workload, each recipe and seed from the newest sweep that ran it (nights are no seeds), with
// speedups from the GPU layer sweep; its chart names each point.
TEST(Frontier, TheReportTakesEachRecipeAndSeedFromTheNewestSweep) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "f.db", store::Store::Mode::write);
  layer_sweep(store, {{"bf16", 10.0}, {"int8-row", 8.0}});
  convergence_sweep(store, {{"bf16", 0, 4.00}, {"int8-row", 0, 4.80}}, "nightly");
  convergence_sweep(store, {{"bf16", 0, 4.00}, {"int8-row", 0, 4.01}}, "nightly");
  const std::vector<TitledFrontier> frontiers = report_frontiers(store, store.sweeps());
  ASSERT_EQ(frontiers.size(), 1u);
  EXPECT_NE(frontiers[0].title.find("model:small"), std::string::npos) << frontiers[0].title;
  EXPECT_NE(frontiers[0].title.find("label 'nightly'"), std::string::npos) << frontiers[0].title;
  const Frontier& f = frontiers[0].frontier;
  ASSERT_EQ(f.rows.size(), 2u);
  const FrontierRow& row = f.rows[1];
  EXPECT_EQ(row.recipe, "int8-row");
  EXPECT_EQ(row.verdict.seeds, 1);  // the newest night only, not two seeds
  EXPECT_EQ(row.verdict.verdict, Parity::parity) << row.verdict.why;
  EXPECT_TRUE(row.fastest_at_parity);
  ASSERT_TRUE(row.speedup);
  EXPECT_NEAR(row.speedup->ratio, 1.25, 0.02);
  const std::string script = gnuplot_script(frontier_chart(f));
  EXPECT_NE(script.find("\"int8-row\""), std::string::npos) << script;
  EXPECT_NE(script.find("with labels"), std::string::npos) << script;
  // Sweeps without convergence runs give no frontier.
  EXPECT_TRUE(report_frontiers(store, {*store.sweep(1)}).empty());
}

// A speed sweep of 10-step model runs on a GPU: their validation losses give no verdict, so no
// recipe is marked fastest at parity and the chart has no point.
TEST(Frontier, ABenchmarksShortModelRunsAreNoVerdict) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "f.db", store::Store::Mode::write);
  layer_sweep(store, {{"bf16", 8.5}, {"int8-tensor", 6.3}});
  convergence_sweep(store, {{"bf16", 0, 10.81}, {"int8-tensor", 0, 10.83}}, "status-eight", 10);
  const std::vector<TitledFrontier> frontiers = report_frontiers(store, store.sweeps());
  ASSERT_EQ(frontiers.size(), 1u);
  const Frontier& f = frontiers[0].frontier;
  for (const FrontierRow& row : f.rows) {
    EXPECT_EQ(row.verdict.verdict, Parity::too_short) << row.recipe;
    EXPECT_FALSE(row.fastest_at_parity) << row.recipe;
  }
  const std::string md = render_frontier(f);
  EXPECT_NE(md.find("too short"), std::string::npos) << md;
  EXPECT_EQ(md.find("◆"), std::string::npos) << md;
  EXPECT_FALSE(has_data(frontier_chart(f)));
}

// The speedups come from the newest layer sweep whose times are not flagged; where every one is
// flagged, the newest, and the source line says why its times are not comparable.
TEST(Frontier, TheSpeedSourceSkipsAFlaggedSweepAndNamesTheFlagWhenNoOtherExists) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "f.db", store::Store::Mode::write);
  const auto verdicts = judge({seed("bf16", 0, 4.0), seed("int8-row", 0, 4.0)}, ParityRule{});
  const int64_t older = layer_sweep(store, {{"bf16", 10.0}, {"int8-row", 8.0}});
  const int64_t flagged = layer_sweep(store, {{"bf16", 10.0}, {"int8-row", 6.0}});
  store.set_clock_fell(store.runs(flagged).back().id, true);
  Frontier f = build_frontier(store, verdicts, std::nullopt);
  ASSERT_TRUE(f.source);
  EXPECT_EQ(f.source->sweep_id, older);
  EXPECT_TRUE(f.source->flagged.empty());
  EXPECT_NEAR(f.rows[1].speedup->ratio, 1.25, 0.02);
  EXPECT_EQ(frontier_source(f).find("not comparable"), std::string::npos);

  // Named with --speed-from, the flagged sweep is used and said to be flagged.
  f = build_frontier(store, verdicts, flagged);
  EXPECT_NE(frontier_source(f).find("not comparable as they are: the SM clock fell"),
            std::string::npos)
      << frontier_source(f);

  lpbench::testing::TempDir other;
  store::Store only = store::Store::open(other / "g.db", store::Store::Mode::write);
  const int64_t lone = layer_sweep(only, {{"bf16", 10.0}, {"int8-row", 8.0}});
  only.set_clock_fell(only.runs(lone).front().id, true);
  f = build_frontier(only, verdicts, std::nullopt);
  ASSERT_TRUE(f.source);
  EXPECT_EQ(f.source->sweep_id, lone);
  EXPECT_NE(frontier_source(f).find("not comparable"), std::string::npos) << frontier_source(f);
}

// A sweep whose measured steps include the caching allocator's retries (¶ in its own table) is
// flagged like one whose clock fell; retries in warm-up steps alone are not.
TEST(Frontier, TheSpeedSourceSkipsASweepWhoseMeasuredStepsIncludeAllocatorRetries) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "f.db", store::Store::Mode::write);
  const auto verdicts = judge({seed("bf16", 0, 4.0), seed("int8-row", 0, 4.0)}, ParityRule{});
  layer_sweep(store, {{"bf16", 10.0}, {"int8-row", 8.0}});  // older, unflagged
  const int64_t warm_only = layer_sweep(store, {{"bf16", 10.0}, {"int8-row", 7.0}});
  const int64_t retried = layer_sweep(store, {{"bf16", 10.0}, {"int8-row", 6.0}});
  store.add_metrics({{store.runs(warm_only).back().id, 2, store::kAllocationRetriesMetric, 4.0}});
  const int64_t tight = store.runs(retried).back().id;
  store.add_metrics({{tight, 5, store::kAllocationRetriesMetric, 1.0},
                     {tight, 9, store::kAllocationRetriesMetric, 0.0}});
  Frontier f = build_frontier(store, verdicts, std::nullopt);
  ASSERT_TRUE(f.source);
  EXPECT_EQ(f.source->sweep_id, warm_only);
  EXPECT_NEAR(f.rows[1].speedup->ratio, 10.0 / 7.0, 0.02);

  f = build_frontier(store, verdicts, retried);
  EXPECT_NE(frontier_source(f).find(fmt::format(
                "retry an allocation in 1 of run {}'s (int8-row) 12 measured steps", tight)),
            std::string::npos)
      << frontier_source(f);
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
