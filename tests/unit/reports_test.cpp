#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <string>

#include "base/env/process.h"
#include "base/store/store.h"
#include "reports/run_summary.h"
#include "reports/speedup.h"
#include "reports/sweep_report.h"
#include "reports/text_table.h"
#include "tests/support/run_record.h"
#include "tests/support/temp_dir.h"

namespace lpbench::reports {
namespace {

stats::Summary spread(double p10, double median, double p90) {
  stats::Summary s;
  s.count = 10;
  s.p10 = p10;
  s.median = median;
  s.p90 = p90;
  return s;
}

TEST(Speedup, ClaimsADifferenceOnlyBeyondTheSpread) {
  const stats::Summary base = spread(9.0, 10.0, 11.0);
  EXPECT_EQ(speedup(base, spread(7.0, 8.0, 8.9)).verdict, SpeedVerdict::faster);
  EXPECT_EQ(speedup(base, spread(11.1, 12.0, 13.0)).verdict, SpeedVerdict::slower);
  EXPECT_EQ(speedup(base, spread(8.0, 9.5, 10.0)).verdict, SpeedVerdict::same);
  const Speedup s = speedup(base, spread(7.0, 8.0, 8.9));
  EXPECT_DOUBLE_EQ(s.ratio, 1.25);
  EXPECT_DOUBLE_EQ(s.low, 9.0 / 8.9);
  EXPECT_DOUBLE_EQ(s.high, 11.0 / 7.0);
  // Twice the work per step in the same time is twice the speed.
  EXPECT_DOUBLE_EQ(speedup(base, base, 2.0).ratio, 2.0);
  EXPECT_EQ(speedup(base, base, 2.0).verdict, SpeedVerdict::faster);
}

TEST(Speedup, OnlyARunThatEndedOkWithMeasuredStepsCounts) {
  store::RunRecord run = lpbench::testing::test_run_record(1, "bf16");
  run.id = 7;
  run.status = store::RunStatus::ok;
  EXPECT_FALSE(speedup_refusal(run, spread(1, 2, 3)).has_value());
  stats::Summary none;
  EXPECT_EQ(speedup_refusal(run, none), "bf16 run 7 has no measured step");
  for (const store::RunStatus status :
       {store::RunStatus::diverged, store::RunStatus::oom, store::RunStatus::failed,
        store::RunStatus::interrupted, store::RunStatus::running}) {
    run.status = status;
    EXPECT_EQ(speedup_refusal(run, spread(1, 2, 3)),
              "bf16 run 7 ended " + std::string(store::to_string(status)));
  }
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

// A sweep written through the store: runs with known step times and losses.
class StoredSweep {
 public:
  StoredSweep()
      : store_(store::Store::open(dir_ / "r.db", store::Store::Mode::write)),
        sweep_(store_.add_sweep({0, "2026-11-22T00:00:00.000Z", "lpbench run", "h", "0"})) {}

  int64_t add_run(const std::string& recipe, double ms, double loss,
                  std::optional<std::string> backend = std::nullopt,
                  store::RunStatus status = store::RunStatus::ok) {
    store::RunRecord r = lpbench::testing::test_run_record(sweep_, recipe);
    r.level = "model";
    r.int8_backend = std::move(backend);
    r.tokens_per_step = 1000;
    const int64_t id = store_.add_run(r);
    for (int64_t step = 0; step < 20; ++step) {
      // Two warm-up steps far off, then a tight spread around `ms`.
      const double t = step < 2 ? 100 * ms : ms + 0.01 * static_cast<double>(step % 3);
      store_.add_step(
          {id, step, step < 2, loss, t, 1000, 1e-3, 1.0, std::nullopt, std::nullopt, std::nullopt});
    }
    store_.finish_run(
        id, status,
        status == store::RunStatus::ok ? std::nullopt : std::optional<std::string>("it broke"));
    return id;
  }

  std::string markdown() const {
    return render_sweep_markdown(build_sweep_report(store_, *store_.sweep(sweep_)));
  }
  store::Store& store() { return store_; }

 private:
  lpbench::testing::TempDir dir_;
  store::Store store_;
  int64_t sweep_;
};

TEST(SweepReport, ShowsTheStoredNumbersWithSpeedupAndLossGap) {
  StoredSweep sweep;
  sweep.add_run("bf16", 10.0, 2.0);
  sweep.add_run("int8-tensor", 8.0, 2.02, "cpu-reference");
  const std::string text = sweep.markdown();
  EXPECT_NE(text.find("10.01 (10.00–10.02)"), std::string::npos) << text;  // warm-up left out
  EXPECT_NE(text.find("1.25× faster"), std::string::npos) << text;
  EXPECT_NE(text.find("+1.00 %"), std::string::npos) << text;
  EXPECT_NE(text.find("99900"), std::string::npos) << text;  // tokens/s of bf16: 1000 / 10.01 ms
  EXPECT_NE(text.find("cpu †"), std::string::npos) << text;
  EXPECT_NE(text.find("emulated"), std::string::npos) << text;
  // The CPU reference's runs carry the mark, not a backend note.
  EXPECT_EQ(text.find("Quantized GEMMs ran on"), std::string::npos) << text;
  EXPECT_EQ(text.find("SM clock"), std::string::npos) << text;  // no step has one
}

// Every name a CPU path records is marked: the reference, int8-fallback's reference with its
// residual, a recipe whose GEMMs differ, and the name of lpbench 0.1's databases.
TEST(SweepReport, MarksEveryRunWhoseProductsWereEmulatedOnTheCpu) {
  StoredSweep sweep;
  sweep.add_run("bf16", 10.0, 2.0);
  for (const char* backend :
       {"cpu-reference", "cpu-reference+residual",
        "fprop: cpu-reference; dgrad: cpu-reference; wgrad: bf16", "cpu-exact"}) {
    sweep.add_run("int8-tensor", 8.0, 2.0, backend);
  }
  const std::string text = sweep.markdown();
  size_t marked = 0;
  for (size_t at = text.find("| cpu †"); at != std::string::npos; at = text.find("| cpu †", at + 1))
    ++marked;
  EXPECT_EQ(marked, 4U) << text;
  EXPECT_EQ(text.find("Quantized GEMMs ran on"), std::string::npos) << text;
}

TEST(SweepReport, ABf16RunThatDidNotEndOkIsNoBaseline) {
  for (const store::RunStatus status :
       {store::RunStatus::diverged, store::RunStatus::oom, store::RunStatus::interrupted}) {
    StoredSweep sweep;
    const int64_t bf16 = sweep.add_run("bf16", 10.0, 2.0, std::nullopt, status);
    sweep.add_run("int8-tensor", 8.0, 2.02, "cpu-reference");
    const std::string text = sweep.markdown();
    EXPECT_EQ(text.find("faster"), std::string::npos) << text;
    EXPECT_EQ(text.find("+1.00 %"), std::string::npos) << text;  // nor a loss gap
    EXPECT_NE(text.find(fmt::format("run 2 (int8-tensor): no speedup, bf16 run {} ended {}", bf16,
                                    store::to_string(status))),
              std::string::npos)
        << text;
  }
}

TEST(SweepReport, ARecipeRunThatDidNotEndOkGetsNoSpeedup) {
  StoredSweep sweep;
  sweep.add_run("bf16", 10.0, 2.0);
  sweep.add_run("int8-tensor", 8.0, 2.0, "cpu-reference", store::RunStatus::diverged);
  const std::string text = sweep.markdown();
  EXPECT_EQ(text.find("faster"), std::string::npos) << text;
  EXPECT_NE(text.find("run 2 (int8-tensor): no speedup, int8-tensor run 2 ended diverged"),
            std::string::npos)
      << text;
}

TEST(SweepReport, MarksARunMeasuredUnderContention) {
  StoredSweep sweep;
  sweep.add_run("bf16", 10.0, 2.0);
  const int64_t busy = sweep.add_run("int8-tensor", 8.0, 2.0, "cpu-reference");
  sweep.store().set_contention(busy, "other processes used 48 % of the 2 CPUs' time");
  const std::string text = sweep.markdown();
  EXPECT_NE(text.find("| ok §"), std::string::npos) << text;
  EXPECT_NE(text.find("run 2 (int8-tensor): other processes used 48 % of the 2 CPUs' time"),
            std::string::npos)
      << text;
}

// A run whose measured steps include the caching allocator releasing its cache to retry an
// allocation is flagged, with how many of its measured steps did; retries in warm-up steps are
// not the figures' and flag nothing.
TEST(SweepReport, MarksARunWhoseMeasuredStepsIncludeAllocatorRetries) {
  StoredSweep sweep;
  const int64_t base = sweep.add_run("bf16", 10.0, 2.0);
  const int64_t tight = sweep.add_run("int8-tensor", 8.0, 2.0, "lpbench-wgmma");
  sweep.store().add_metrics({{base, 1, store::kAllocationRetriesMetric, 3.0},  // a warm-up step
                             {tight, 4, store::kAllocationRetriesMetric, 1.0},
                             {tight, 9, store::kAllocationRetriesMetric, 2.0}});
  const std::string text = sweep.markdown();
  const auto row = [&text](const std::string& recipe) {
    const size_t at = text.find("| " + recipe + " ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(row("bf16").find("¶"), std::string::npos) << text;
  EXPECT_NE(row("int8-tensor").find("| ok ¶"), std::string::npos) << text;
  EXPECT_NE(text.find("run 2 (int8-tensor) in 2 of 18"), std::string::npos) << text;
  EXPECT_EQ(text.find("run 1 (bf16) in"), std::string::npos) << text;

  const reports::SweepReport report = build_sweep_report(
      sweep.store(), *sweep.store().sweep(sweep.store().runs().front().sweep_id));
  ASSERT_EQ(report.runs.size(), 2U);
  EXPECT_EQ(report.runs[0].steps_with_allocation_retries, 0);
  EXPECT_EQ(report.runs[1].steps_with_allocation_retries, 2);
}

// The files a run wrote about single steps (a profiler trace, a memory snapshot) are named under
// the sweep's table, each with its run and step; a sweep without any names none.
TEST(SweepReport, NamesTheFilesWrittenAboutSingleSteps) {
  StoredSweep sweep;
  sweep.add_run("bf16", 10.0, 2.0);
  const int64_t tight = sweep.add_run("int8-tensor", 8.0, 2.0, "lpbench-wgmma");
  EXPECT_EQ(sweep.markdown().find("Files ("), std::string::npos);
  sweep.store().add_artifact(
      {0, tight, "memory-snapshot", 5, "/data/x-run2-step5.memory.pickle", "allocator history"});
  const std::string text = sweep.markdown();
  EXPECT_NE(text.find("Files (the steps they describe are left out of the statistics): run 2 "
                      "step 5: memory-snapshot /data/x-run2-step5.memory.pickle."),
            std::string::npos)
      << text;
}

TEST(SpeedupText, NeverPrintsOnePointZeroBesideFasterOrSlower) {
  auto text = [](double ratio, SpeedVerdict verdict) {
    return speedup_text({ratio, ratio, ratio, verdict});
  };
  EXPECT_EQ(text(1.25, SpeedVerdict::faster), "1.25× faster");
  EXPECT_EQ(text(0.85, SpeedVerdict::slower), "0.85× slower");
  EXPECT_EQ(text(0.9964, SpeedVerdict::slower), "0.996× slower");
  EXPECT_EQ(text(1.0021, SpeedVerdict::faster), "1.002× faster");
  EXPECT_EQ(text(0.998, SpeedVerdict::same), "1.00× same");
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

TEST(SweepReport, SaysWhichRunsWereReplayedFromACudaGraph) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "r.db", store::Store::Mode::write);
  const int64_t sweep = store.add_sweep({0, "2026-11-22T00:00:00.000Z", "lpbench run", "h", "0"});
  auto add_run = [&](const std::string& recipe, bool graph) {
    store::RunRecord r = lpbench::testing::test_run_record(sweep, recipe, "cuda:0");
    r.workload = "layer:tiny";
    r.level = "layer";
    r.config_json = graph ? R"({"cuda_graph": true})" : R"({"cuda_graph": false})";
    store.finish_run(store.add_run(r), store::RunStatus::ok, std::nullopt);
  };
  add_run("bf16", true);
  add_run("int8-tensor", true);
  const std::string text = render_sweep_markdown(build_sweep_report(store, *store.sweep(sweep)));
  EXPECT_NE(text.find("Steps replayed from a CUDA graph (--cuda-graph; runs 1, 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("peak_mem_gib is \"—\""), std::string::npos) << text;

  const int64_t eager = store.add_sweep({0, "2026-11-22T01:00:00.000Z", "lpbench run", "h", "0"});
  store::RunRecord r = lpbench::testing::test_run_record(eager, "bf16", "cuda:0");
  r.config_json = R"({"cuda_graph": false})";
  store.finish_run(store.add_run(r), store::RunStatus::ok, std::nullopt);
  const std::string plain = render_sweep_markdown(build_sweep_report(store, *store.sweep(eager)));
  EXPECT_EQ(plain.find("CUDA graph"), std::string::npos) << plain;
}

// Each run's measured steps' SM clocks, warm-up left out, beside the times they explain.
TEST(SweepReport, GivesTheSmClockEachRunsMeasuredStepsRanAt) {
  lpbench::testing::TempDir dir;
  store::Store store = store::Store::open(dir / "r.db", store::Store::Mode::write);
  const int64_t sweep = store.add_sweep({0, "2026-12-01T00:00:00.000Z", "lpbench run", "h", "0"});
  auto add_run = [&](const std::string& recipe, double ms, double mhz) {
    store::RunRecord r = lpbench::testing::test_run_record(sweep, recipe, "cuda:0");
    r.workload = "layer:tiny";
    r.level = "layer";
    const int64_t id = store.add_run(r);
    for (int64_t step = 0; step < 12; ++step) {
      // Two warm-up steps at the boost clock, then one clock a recipe, one step in three at the
      // next 15 MHz step down.
      const bool warmup = step < 2;
      const double clock = warmup ? 1980.0 : mhz - (step % 3 == 0 ? 15.0 : 0.0);
      store.add_step(
          {id, step, warmup, NAN, ms, 4096, 0.0, NAN, std::nullopt, std::nullopt, clock});
    }
    store.finish_run(id, store::RunStatus::ok, std::nullopt);
  };
  add_run("bf16", 8.5, 1755.0);
  add_run("int8-tensor", 5.7, 1650.0);
  const std::string text = render_sweep_markdown(build_sweep_report(store, *store.sweep(sweep)));
  EXPECT_NE(text.find("median (p10–p90): run 1 (bf16) 1755 (1740–1755); run 2 (int8-tensor) "
                      "1650 (1635–1650)."),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace lpbench::reports
