// compare's verdicts and exit codes on synthetic histories written through the store.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "base/env/process.h"
#include "base/errors.h"
#include "base/store/store.h"
#include "reports/compare.h"
#include "reports/compare_parts.h"
#include "reports/compare_render.h"
#include "reports/selection.h"
#include "tests/support/temp_dir.h"

namespace lpbench::reports {
namespace {

// A history of sweeps with step times drawn around a chosen median.
class History {
 public:
  History() : store_(store::Store::open(dir_ / "h.db", store::Store::Mode::write)) {}

  struct RunSpec {
    double median_ms = 100.0;
    double noise_ms = 2.0;  // standard deviation
    int steps = 60;
    double loss = 2.0;
    std::optional<double> peak_gib;
    store::RunStatus status = store::RunStatus::ok;
    std::string recipe = "bf16";
    std::string commit = "0123456789abcdef";
    std::string workload = "model:tiny";
    int seq_len = 64;
    std::string gpu = "NVIDIA H100";
    std::optional<std::string> contention;
    bool cuda_graph = false;
    std::string fusion = "fused";
  };

  // One sweep with one run per spec; returns the sweep's id.
  int64_t sweep(const std::vector<RunSpec>& runs, std::optional<std::string> label = "nightly") {
    const int64_t id = store_.add_sweep({0, fmt::format("2026-11-{:02d}T03:00:00.000Z", ++day_),
                                         "lpbench run", env::host_name(), "0", label});
    const env::ProcessIdentity self = env::current_process();
    for (const RunSpec& spec : runs) {
      store::RunRecord r;
      r.sweep_id = id;
      r.workload = spec.workload;
      r.level = spec.workload.substr(0, spec.workload.find(':'));
      r.recipe = spec.recipe;
      r.device = "cuda:0";
      r.config_json = fmt::format(
          R"({{"training":{{"steps":{},"seed":0,"micro_batch":8,"seq_len":{},"lr":0.003,)"
          R"("fusion":"{}"}},"cuda_graph":{}}})",
          spec.steps, spec.seq_len, spec.fusion, spec.cuda_graph);
      r.started_at = "2026-11-01T00:00:00.000Z";
      r.pid = self.pid;
      r.process_start = self.start;
      r.provenance.host = env::host_name();
      r.provenance.git_commit = spec.commit;
      r.provenance.gpu_name = spec.gpu;
      r.provenance.torch_version = "2.11.0";
      r.provenance.lpbench_version = "0";
      r.tokens_per_step = 8 * spec.seq_len;
      r.data = "synthetic";
      const int64_t run = store_.add_run(r);
      std::normal_distribution<double> noise(spec.median_ms, spec.noise_ms);
      for (int step = 0; step < spec.steps; ++step) {
        const bool warmup = step < 2;
        store_.add_step({run, step, warmup, spec.loss, warmup ? 10 * spec.median_ms : noise(rng_),
                         512, 1e-3, 1.0, spec.peak_gib, spec.peak_gib, std::nullopt});
      }
      if (spec.contention) store_.set_contention(run, spec.contention);
      store_.finish_run(
          run, spec.status,
          spec.status == store::RunStatus::ok ? std::nullopt : std::optional<std::string>("boom"));
    }
    return id;
  }

  Comparison compare(const std::string& baseline, const std::string& candidate,
                     const ComparePolicy& policy = {}) {
    const Selection b = parse_selection(baseline, "--baseline");
    const Selection c = parse_selection(candidate, "--candidate");
    return compare_runs(store_, select_runs(store_, b, c), baseline, candidate, policy);
  }

  // One kernel suite case: the qkv fprop GEMM of llama2-7b at 4096 tokens under `recipe`.
  struct KernelSpec {
    std::string recipe = "bf16";
    double median_ms = 1.0;
    double noise_ms = 0.005;
    std::string status = "ok";
    std::string gpu = "NVIDIA H100";
    std::string commit = "0123456789abcdef";
  };

  // One `lpbench gemm` sweep with a result per spec; returns the sweep's id.
  int64_t kernel_sweep(const std::vector<KernelSpec>& cases,
                       std::optional<std::string> label = "nightly") {
    const int64_t id = store_.add_sweep({0, fmt::format("2026-11-{:02d}T03:00:00.000Z", ++day_),
                                         "lpbench gemm", env::host_name(), "0", label});
    for (const KernelSpec& spec : cases) {
      store::KernelResultRecord k;
      k.sweep_id = id;
      const bool quantized = spec.recipe != "bf16";
      k.name = fmt::format("gemm/llama2-7b/qkv/fprop/T4096/{}{}", spec.recipe,
                           quantized ? "/with_quantization" : "");
      k.op = "gemm";
      k.model = "llama2-7b";
      k.part = "qkv";
      k.gemm = "fprop";
      k.recipe = spec.recipe;
      k.variant = quantized ? "with_quantization" : "none";
      k.backend = quantized ? "wgmma" : "cublas";
      k.m = 4096, k.n = 12288, k.k = 4096;
      k.status = spec.status;
      k.gpu_name = spec.gpu;
      k.config_json = fmt::format(R"({{"git_commit":"{}"}})", spec.commit);
      if (spec.status == "ok") {
        std::normal_distribution<double> noise(spec.median_ms, spec.noise_ms);
        for (int i = 0; i < 30; ++i)
          k.samples_ms.push_back(noise(rng_));
        std::vector<double> sorted = k.samples_ms;
        std::sort(sorted.begin(), sorted.end());
        k.samples = 30;
        k.median_ms = sorted[15];
        k.p10_ms = sorted[3];
        k.p90_ms = sorted[27];
      } else {
        k.reason = "validation: error 0.5 beyond tolerance 0.01";
      }
      store_.add_kernel_result(k);
    }
    return id;
  }

  store::Store& store() { return store_; }

 private:
  lpbench::testing::TempDir dir_;
  store::Store store_;
  std::mt19937 rng_{42};
  int day_ = 0;
};

const MetricResult& metric(const Comparison& c, Metric m, size_t group = 0) {
  for (const MetricResult& r : c.groups.at(group).metrics) {
    if (r.metric == m) return r;
  }
  throw std::runtime_error("metric not compared");
}

// Five nights at 100 ms, then the candidate.
std::string five_nights(History& h) {
  for (int i = 0; i < 5; ++i)
    h.sweep({{}});
  return "nightly:5";
}

TEST(Compare, AClearRegressionIsSlowerAndExitsOne) {
  History h;
  const std::string baseline = five_nights(h);
  History::RunSpec slow;
  slow.median_ms = 110.0;
  const int64_t candidate = h.sweep({slow});
  const Comparison c = h.compare(baseline, fmt::format("sweep:{}", candidate));
  ASSERT_EQ(c.groups.size(), 1U);
  EXPECT_EQ(c.groups[0].baseline_runs.size(), 5U);  // the candidate is not its own baseline
  EXPECT_EQ(metric(c, Metric::step_ms).verdict, Verdict::regressed);
  EXPECT_EQ(verdict_word(Metric::step_ms, Verdict::regressed), "SLOWER");
  EXPECT_EQ(metric(c, Metric::tokens_per_s).verdict, Verdict::regressed);
  EXPECT_EQ(metric(c, Metric::final_loss).verdict, Verdict::same);
  EXPECT_EQ(c.exit_code(), 1);
  const std::string md = render_compare_markdown(c);
  EXPECT_NE(md.find("**REGRESSION**"), std::string::npos) << md;
  EXPECT_NE(md.find("**SLOWER**"), std::string::npos) << md;
  EXPECT_NE(md.find("99 % CI"), std::string::npos) << md;  // never a bare percentage
  const std::string junit = render_compare_junit(c);
  EXPECT_NE(junit.find("failures=\"2\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<failure"), std::string::npos) << junit;
}

TEST(Compare, AClearImprovementIsFasterAndExitsZero) {
  History h;
  const std::string baseline = five_nights(h);
  History::RunSpec fast;
  fast.median_ms = 90.0;
  const int64_t candidate = h.sweep({fast});
  const Comparison c = h.compare(baseline, fmt::format("sweep:{}", candidate));
  EXPECT_EQ(metric(c, Metric::step_ms).verdict, Verdict::improved);
  EXPECT_EQ(verdict_word(Metric::step_ms, Verdict::improved), "FASTER");
  EXPECT_EQ(c.exit_code(), 0);
}

TEST(Compare, PureNoiseIsTheSameAndExitsZero) {
  History h;
  const std::string baseline = five_nights(h);
  const int64_t candidate = h.sweep({{}});  // drawn from the same distribution
  const Comparison c = h.compare(baseline, fmt::format("sweep:{}", candidate));
  EXPECT_EQ(metric(c, Metric::step_ms).verdict, Verdict::same) << metric(c, Metric::step_ms).change;
  EXPECT_EQ(metric(c, Metric::tokens_per_s).verdict, Verdict::same);
  EXPECT_EQ(metric(c, Metric::final_loss).verdict, Verdict::same);
  EXPECT_EQ(c.exit_code(), 0) << render_compare_markdown(c);
}

TEST(Compare, TooFewSamplesAreUnsureAndExitThree) {
  History h;
  History::RunSpec short_run;
  short_run.steps = 5;  // 3 measured steps after 2 of warm-up
  h.sweep({short_run});
  const int64_t candidate = h.sweep({short_run});
  const Comparison c = h.compare("nightly:5", fmt::format("sweep:{}", candidate));
  EXPECT_EQ(metric(c, Metric::step_ms).verdict, Verdict::unsure);
  EXPECT_NE(metric(c, Metric::step_ms).reason.find("too few"), std::string::npos);
  EXPECT_EQ(c.exit_code(), 3);
}

TEST(Compare, NoisyDataIsUnsureRatherThanSame) {
  History h;
  History::RunSpec noisy;
  noisy.noise_ms = 40.0;
  noisy.steps = 12;
  for (int i = 0; i < 3; ++i)
    h.sweep({noisy});
  const int64_t candidate = h.sweep({noisy});
  const Comparison c = h.compare("nightly:3", fmt::format("sweep:{}", candidate));
  const std::string& why = metric(c, Metric::step_ms).reason;
  EXPECT_EQ(metric(c, Metric::step_ms).verdict, Verdict::unsure);
  EXPECT_TRUE(why.find("neither") != std::string::npos ||
              why.find("spread too much") != std::string::npos)
      << why;
  EXPECT_EQ(c.exit_code(), 3);
}

// Steps of one run vary less than runs of different nights: a shift between sweeps is judged
// only against three or more baseline runs.
TEST(Compare, TwoEarlierNightsAreTooFewToJudgeAcrossSweeps) {
  History h;
  h.sweep({{}});
  h.sweep({{}});
  History::RunSpec slow;
  slow.median_ms = 110.0;
  const int64_t candidate = h.sweep({slow});
  const Comparison c = h.compare("nightly:7", fmt::format("sweep:{}", candidate));
  EXPECT_EQ(metric(c, Metric::step_ms).verdict, Verdict::unsure);
  EXPECT_NE(metric(c, Metric::step_ms).reason.find("run-to-run"), std::string::npos);
  EXPECT_EQ(c.exit_code(), 3);
}

// A night whose steps sit at `median_ms` with little noise.
History::RunSpec steady(double median_ms, double noise_ms) {
  History::RunSpec spec;
  spec.median_ms = median_ms;
  spec.noise_ms = noise_ms;
  return spec;
}

// With three nights whose medians spread widely, a candidate inside their prediction interval is
// no claim either way: the interval is too wide to call it SAME.
TEST(Compare, ACandidateWithinWidelySpreadNightsIsUnsure) {
  History h;
  for (double ms : {90.0, 100.0, 115.0})
    h.sweep({steady(ms, 0.5)});
  const int64_t candidate = h.sweep({steady(112.0, 0.5)});
  const Comparison c = h.compare("nightly:3", fmt::format("sweep:{}", candidate));
  EXPECT_EQ(metric(c, Metric::step_ms).verdict, Verdict::unsure);
  EXPECT_NE(metric(c, Metric::step_ms).reason.find("spread too much"), std::string::npos)
      << metric(c, Metric::step_ms).reason;
}

// Three close nights and a candidate a little slower than all of them (3 %, beyond the 2 %
// threshold, with steps that do not overlap): one more unchanged night can land there, so it is
// SAME, with the interval in the reason; far outside it, SLOWER.
TEST(Compare, ANightInsideThePredictionIntervalOfCloseNightsIsTheSame) {
  History h;
  for (double ms : {99.5, 100.0, 100.5})
    h.sweep({steady(ms, 0.2)});
  const int64_t inside = h.sweep({steady(103.0, 0.2)});
  const Comparison same = h.compare("sweep:1,2,3", fmt::format("sweep:{}", inside));
  EXPECT_EQ(metric(same, Metric::step_ms).verdict, Verdict::same);
  EXPECT_NE(metric(same, Metric::step_ms).reason.find("prediction interval"), std::string::npos)
      << metric(same, Metric::step_ms).reason;
  const int64_t outside = h.sweep({steady(130.0, 0.2)});
  const Comparison slower = h.compare("sweep:1,2,3", fmt::format("sweep:{}", outside));
  EXPECT_EQ(metric(slower, Metric::step_ms).verdict, Verdict::regressed);
  EXPECT_EQ(slower.exit_code(), 1);
}

TEST(Compare, NothingSelectedIsNotEnoughData) {
  History h;
  const int64_t candidate = h.sweep({{}});
  const Comparison c = h.compare("nightly:5", fmt::format("sweep:{}", candidate));
  EXPECT_TRUE(c.groups.empty());
  EXPECT_EQ(c.exit_code(), 3);
  EXPECT_NE(render_compare_junit(c).find("<skipped"), std::string::npos);
}

TEST(Compare, AFailedCandidateRunIsARegression) {
  History h;
  const std::string baseline = five_nights(h);
  History::RunSpec failed;
  failed.status = store::RunStatus::failed;
  const int64_t candidate = h.sweep({failed});
  const Comparison c = h.compare(baseline, fmt::format("sweep:{}", candidate));
  EXPECT_EQ(metric(c, Metric::status).verdict, Verdict::regressed);
  EXPECT_EQ(c.exit_code(), 1);
}

TEST(Compare, MemoryAndLossOutsideTheirBandsAreWorse) {
  History h;
  History::RunSpec base;
  base.peak_gib = 10.0;
  for (int i = 0; i < 3; ++i)
    h.sweep({base});
  History::RunSpec worse = base;
  worse.peak_gib = 11.0;
  worse.loss = 2.1;  // +5 %
  const int64_t candidate = h.sweep({worse});
  const Comparison c = h.compare("nightly:3", fmt::format("sweep:{}", candidate));
  EXPECT_EQ(metric(c, Metric::peak_mem_gib).verdict, Verdict::regressed);
  EXPECT_EQ(verdict_word(Metric::peak_mem_gib, Verdict::regressed), "WORSE");
  EXPECT_EQ(metric(c, Metric::final_loss).verdict, Verdict::regressed);
  EXPECT_EQ(metric(c, Metric::step_ms).verdict, Verdict::same);
}

// The final losses of the GPU night that showed why a loss is judged at 99.9 %: int8-block's
// 300-step loss over four nights, then an unchanged night 1.02 % above their mean (a 99 % band
// was 1.01 % wide). At 99.9 % it is SAME; 5 % above is still WORSE.
TEST(Compare, AFinalLossIsJudgedAgainstTheNightsPredictionIntervalAtOneInAThousand) {
  for (const auto& [loss, expected] : std::vector<std::pair<double, Verdict>>{
           {4.0835, Verdict::same}, {4.25, Verdict::regressed}}) {
    History h;
    for (double night : {4.0334, 4.0440, 4.0452, 4.0470}) {  // mean 4.0424, as measured
      History::RunSpec base;
      base.loss = night;
      h.sweep({base});
    }
    History::RunSpec candidate;
    candidate.loss = loss;
    const int64_t id = h.sweep({candidate});
    const Comparison c = h.compare("nightly:4", fmt::format("sweep:{}", id));
    EXPECT_EQ(metric(c, Metric::final_loss).verdict, expected) << loss;
    EXPECT_NE(metric(c, Metric::final_loss).change.find("parity band"), std::string::npos);
  }
}

TEST(Compare, LossesOfRunsTrainedDifferentlyAreNotCompared) {
  History h;
  History::RunSpec a;
  History::RunSpec b;
  b.steps = 80;
  h.sweep({a});
  const int64_t candidate = h.sweep({b});
  const Comparison c = h.compare("nightly:1", fmt::format("sweep:{}", candidate));
  EXPECT_EQ(metric(c, Metric::final_loss).verdict, Verdict::unsure);
  EXPECT_NE(metric(c, Metric::final_loss).reason.find("trained differently"), std::string::npos);
}

TEST(Compare, TwoSingleRunsAreComparedWhateverTheirRecipe) {
  History h;
  History::RunSpec bf16;
  History::RunSpec int8;
  int8.recipe = "int8-tensor";
  int8.median_ms = 80.0;
  h.sweep({bf16, int8});
  const Comparison c = h.compare("run:1", "run:2");
  ASSERT_EQ(c.groups.size(), 1U);
  EXPECT_EQ(c.groups[0].recipe, "bf16 → int8-tensor");
  EXPECT_EQ(metric(c, Metric::step_ms).verdict, Verdict::improved);
}

// Runs of another workload, step size or GPU model are not judged against each other (exit 2),
// unless allowed, and then every verdict carries a warning.
TEST(Compare, RunsThatAreNotAlikeAreRefusedUnlessAllowed) {
  History h;
  History::RunSpec base;
  History::RunSpec other_workload;
  other_workload.workload = "layer:tiny";
  other_workload.median_ms = 50.0;
  History::RunSpec other_size;
  other_size.seq_len = 128;
  History::RunSpec other_gpu;
  other_gpu.gpu = "NVIDIA H200";
  History::RunSpec replayed;
  replayed.cuda_graph = true;
  History::RunSpec unfused;
  unfused.fusion = "none";
  h.sweep({base, other_workload, other_size, other_gpu, replayed, unfused});
  for (const auto& [run, words] : std::vector<std::pair<std::string, std::string>>{
           {"run:2", "workload layer:tiny against model:tiny"},
           {"run:3", "size micro-batch 8 × seq-len 128 against micro-batch 8 × seq-len 64"},
           {"run:4", "GPU NVIDIA H200 against NVIDIA H100"},
           {"run:5", "execution steps from a CUDA graph against eager steps"},
           {"run:6", "operators --fusion none against --fusion fused"}}) {
    try {
      h.compare("run:1", run);
      ADD_FAILURE() << run << " was judged against run 1";
    } catch (const InputError& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find(words), std::string::npos) << text;
      EXPECT_NE(text.find("--allow-mismatch"), std::string::npos) << text;
    }
  }
  ComparePolicy allow;
  allow.allow_mismatch = true;
  const Comparison c = h.compare("run:1", "run:2", allow);
  ASSERT_EQ(c.warnings.size(), 1U);
  EXPECT_NE(render_compare_markdown(c).find("**WARNING** (--allow-mismatch): run 2 and run 1 are "
                                            "not alike (workload layer:tiny against model:tiny)"),
            std::string::npos)
      << render_compare_markdown(c);
  EXPECT_NE(render_compare_junit(c).find("WARNING (--allow-mismatch)"), std::string::npos);
}

// Four identical sweeps, the last measured while other jobs shared the machine and 7 % slower:
// compare names the run and does not call a regression on that evidence alone.
TEST(Compare, ARunMeasuredUnderContentionIsNoRegressionOnItsOwn) {
  History h;
  const std::string baseline = five_nights(h);
  History::RunSpec busy;
  busy.median_ms = 107.0;
  busy.contention = "other processes used 52 % of the 2 CPUs' time (load average 3.1)";
  const int64_t candidate = h.sweep({busy});
  const Comparison c = h.compare(baseline, fmt::format("sweep:{}", candidate));
  const MetricResult& step = metric(c, Metric::step_ms);
  EXPECT_EQ(step.verdict, Verdict::unsure);
  EXPECT_NE(step.reason.find("it would read SLOWER"), std::string::npos) << step.reason;
  EXPECT_NE(step.reason.find(fmt::format("run {}: other processes used 52 %", candidate)),
            std::string::npos)
      << step.reason;
  EXPECT_EQ(c.regressions(), 0);
  EXPECT_EQ(c.exit_code(), 3);
}

// A shift the U test finds significant but that lies inside the p10–p90 spreads is "same" in the
// report, so compare does not call it faster or slower either.
TEST(Compare, AShiftInsideTheSpreadsIsNeverFasterOrSlower) {
  History h;
  History::RunSpec base;
  base.steps = 400;
  base.noise_ms = 3.0;
  History::RunSpec slightly_slower = base;
  slightly_slower.median_ms = 103.0;
  h.sweep({base, slightly_slower});
  const Comparison c = h.compare("run:1", "run:2");
  const MetricResult& step = metric(c, Metric::step_ms);
  EXPECT_EQ(step.verdict, Verdict::unsure) << step.change;
  EXPECT_NE(step.reason.find("inside the p10–p90 spreads"), std::string::npos) << step.reason;
  EXPECT_NE(step.change.find("speedup 0.97×"), std::string::npos) << step.change;
}

TEST(Compare, CommitAndSinceSelectRuns) {
  History h;
  History::RunSpec old_commit;
  old_commit.commit = "aaaa1111";
  History::RunSpec new_commit;
  new_commit.commit = "bbbb2222";
  h.sweep({old_commit});
  h.sweep({new_commit}, std::nullopt);
  const SelectedPair pair = select_runs(h.store(), parse_selection("commit:aaaa", "--baseline"),
                                        parse_selection("since:2026-11-02T00:00:00Z", "--c"));
  ASSERT_EQ(pair.baseline.size(), 1U);
  EXPECT_EQ(pair.baseline[0].provenance.git_commit, "aaaa1111");
  ASSERT_EQ(pair.candidate.size(), 1U);
  EXPECT_EQ(pair.candidate[0].provenance.git_commit, "bbbb2222");
}

TEST(Selection, BadFormsAreInputErrors) {
  for (const char* bad : {"sweep:", "sweep:0", "sweep:1,", "run:x", "foo:1", "nightly", "commit:XY",
                          "commit:zzzz", "nightly:-1", "since:yesterday"}) {
    EXPECT_THROW(parse_selection(bad, "--baseline"), InputError) << bad;
  }
  EXPECT_EQ(parse_selection("sweep:3,4", "--baseline").ids, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(parse_selection("since:2026-11-22T03:00:00Z", "--b").text, "2026-11-22T03:00:00");
}

TEST(Selection, MissingIdsAreInputErrors) {
  History h;
  h.sweep({{}});
  EXPECT_THROW(
      select_runs(h.store(), parse_selection("sweep:9", "--b"), parse_selection("sweep:1", "--c")),
      InputError);
  EXPECT_THROW(
      select_runs(h.store(), parse_selection("run:9", "--b"), parse_selection("sweep:1", "--c")),
      InputError);
}

const GroupResult& group_of(const Comparison& c, const std::string& recipe_prefix) {
  for (const GroupResult& g : c.groups) {
    if (g.recipe.rfind(recipe_prefix, 0) == 0) return g;
  }
  throw std::runtime_error("no group of " + recipe_prefix);
}

const MetricResult& metric_of(const GroupResult& g, Metric m) {
  for (const MetricResult& r : g.metrics) {
    if (r.metric == m) return r;
  }
  throw std::runtime_error("metric not compared");
}

// A kernel case is judged like a step, on its samples; its speedup over its BF16 twin is tracked
// night to night, and the regression names the night and the commits between which it came.
TEST(NightlyKernels, ASlowerKernelIsSlowerWithItsRatioAndTheNightThatBrokeIt) {
  History h;
  for (int night = 0; night < 3; ++night)
    h.kernel_sweep({{"bf16", 1.0}, {"int8-tensor", 0.6}});
  History::KernelSpec slow{"int8-tensor", 0.8};
  slow.commit = "badc0ffee000";
  History::KernelSpec twin{"bf16", 1.0};
  twin.commit = "badc0ffee000";
  const int64_t tonight = h.kernel_sweep({twin, slow});
  const Comparison c = h.compare("nightly:7", fmt::format("sweep:{}", tonight));
  ASSERT_EQ(c.groups.size(), 2U);
  const GroupResult& bf16 = group_of(c, "bf16");
  EXPECT_EQ(bf16.kind, GroupResult::Kind::kernel_results);
  EXPECT_EQ(metric_of(bf16, Metric::kernel_ms).verdict, Verdict::same);
  const GroupResult& int8 = group_of(c, "int8-tensor");
  EXPECT_EQ(int8.baseline_runs.size(), 3U);
  const MetricResult& time = metric_of(int8, Metric::kernel_ms);
  EXPECT_EQ(time.verdict, Verdict::regressed) << time.reason;
  const MetricResult& ratio = metric_of(int8, Metric::speedup_vs_bf16);
  EXPECT_EQ(ratio.verdict, Verdict::regressed) << ratio.reason << " " << ratio.change;
  EXPECT_NE(ratio.baseline.find("1.66"), std::string::npos) << ratio.baseline;  // 1.0 / 0.6
  EXPECT_NE(time.culprit.find(fmt::format("first bad night sweep {}", tonight)), std::string::npos)
      << time.culprit;
  EXPECT_NE(time.culprit.find("git log 0123456789ab..badc0ffee000"), std::string::npos)
      << time.culprit;
  EXPECT_EQ(c.exit_code(), 1);
  const std::string md = render_compare_markdown(c);
  EXPECT_NE(md.find("Where it broke"), std::string::npos) << md;
  EXPECT_NE(md.find("speedup over bf16"), std::string::npos) << md;
  EXPECT_NE(md.find("baseline kernel result"), std::string::npos) << md;
  const std::string junit = render_compare_junit(c);
  EXPECT_NE(junit.find("git log 0123456789ab..badc0ffee000"), std::string::npos) << junit;
}

TEST(NightlyKernels, ACaseThatFailsTonightIsARegression) {
  History h;
  for (int night = 0; night < 3; ++night)
    h.kernel_sweep({{"int8-tensor", 0.6}});
  History::KernelSpec broken{"int8-tensor"};
  broken.status = "failed";
  const int64_t tonight = h.kernel_sweep({broken});
  const Comparison c = h.compare("nightly:7", fmt::format("sweep:{}", tonight));
  ASSERT_EQ(c.groups.size(), 1U);
  EXPECT_EQ(metric_of(c.groups[0], Metric::status).verdict, Verdict::regressed);
  EXPECT_NE(metric_of(c.groups[0], Metric::status).candidate.find("validation"), std::string::npos);
  EXPECT_EQ(c.exit_code(), 1);
}

// nightly:N takes the last N results of each case, and leaves tonight's out.
TEST(NightlyKernels, TheBaselineIsTheLastNResultsOfEachCase) {
  History h;
  for (int night = 0; night < 5; ++night)
    h.kernel_sweep({{"bf16", 1.0}});
  const int64_t tonight = h.kernel_sweep({{"bf16", 1.0}});
  const SelectedPair pair = select_runs(h.store(), parse_selection("nightly:3", "--baseline"),
                                        parse_selection(fmt::format("sweep:{}", tonight), "-c"));
  ASSERT_EQ(pair.kernel_baseline.size(), 3U);
  ASSERT_EQ(pair.kernel_candidate.size(), 1U);
  for (const store::KernelResultRecord& k : pair.kernel_baseline) {
    EXPECT_GE(k.sweep_id, tonight - 3);
    EXPECT_LT(k.sweep_id, tonight);
  }
  EXPECT_EQ(h.store().kernel_samples(pair.kernel_candidate[0].id).size(), 30U);
}

// A night on a slower machine slows every recipe alike: the times read SLOWER, the speedup,
// measured within the night, does not move.
TEST(NightlyRatios, AMachineSlowerForEveryRecipeMovesTimesButNotTheSpeedup) {
  History h;
  History::RunSpec bf16, int8;
  int8.recipe = "int8-tensor";
  int8.median_ms = 80.0;
  for (int night = 0; night < 3; ++night)
    h.sweep({bf16, int8});
  bf16.median_ms = 110.0;
  int8.median_ms = 88.0;
  const int64_t tonight = h.sweep({bf16, int8});
  const Comparison c = h.compare("nightly:7", fmt::format("sweep:{}", tonight));
  const GroupResult& g = group_of(c, "int8-tensor");
  EXPECT_EQ(metric_of(g, Metric::step_ms).verdict, Verdict::regressed);
  const MetricResult& ratio = metric_of(g, Metric::speedup_vs_bf16);
  EXPECT_EQ(ratio.verdict, Verdict::same) << ratio.change << " " << ratio.reason;
  EXPECT_TRUE(ratio.culprit.empty());
  EXPECT_THROW(metric_of(group_of(c, "bf16"), Metric::speedup_vs_bf16), std::runtime_error);
}

TEST(NightlyRatios, ARecipeThatAloneSlowsLosesItsSpeedupAndNamesTheNight) {
  History h;
  History::RunSpec bf16, int8;
  int8.recipe = "int8-tensor";
  int8.median_ms = 80.0;
  for (int night = 0; night < 3; ++night)
    h.sweep({bf16, int8});
  int8.median_ms = 95.0;
  int8.commit = "feedface1234";
  bf16.commit = "feedface1234";
  const int64_t tonight = h.sweep({bf16, int8});
  const Comparison c = h.compare("nightly:7", fmt::format("sweep:{}", tonight));
  const MetricResult& ratio = metric_of(group_of(c, "int8-tensor"), Metric::speedup_vs_bf16);
  EXPECT_EQ(ratio.verdict, Verdict::regressed) << ratio.change << " " << ratio.reason;
  EXPECT_NE(ratio.culprit.find("git log 0123456789ab..feedface1234"), std::string::npos)
      << ratio.culprit;
  EXPECT_EQ(c.exit_code(), 1);
}

TEST(NightlyRatios, TwoEarlierNightsAreTooFewForASpeedupVerdict) {
  History h;
  History::RunSpec bf16, int8;
  int8.recipe = "int8-tensor";
  int8.median_ms = 80.0;
  for (int night = 0; night < 2; ++night)
    h.sweep({bf16, int8});
  int8.median_ms = 95.0;
  const int64_t tonight = h.sweep({bf16, int8});
  const Comparison c = h.compare("nightly:7", fmt::format("sweep:{}", tonight));
  const MetricResult& ratio = metric_of(group_of(c, "int8-tensor"), Metric::speedup_vs_bf16);
  EXPECT_EQ(ratio.verdict, Verdict::unsure);
  EXPECT_NE(ratio.reason.find("3 needed"), std::string::npos) << ratio.reason;
}

TEST(NightlyRatios, ALossGapToBf16ThatGrowsIsWorse) {
  History h;
  History::RunSpec bf16, int8;
  int8.recipe = "int8-tensor";
  int8.median_ms = 80.0;
  int8.loss = 2.02;  // 1 % above BF16's 2.0
  for (int night = 0; night < 3; ++night)
    h.sweep({bf16, int8});
  int8.loss = 2.2;  // 10 %
  const int64_t tonight = h.sweep({bf16, int8});
  const Comparison c = h.compare("nightly:7", fmt::format("sweep:{}", tonight));
  const MetricResult& gap = metric_of(group_of(c, "int8-tensor"), Metric::loss_gap_vs_bf16);
  EXPECT_EQ(gap.verdict, Verdict::regressed) << gap.change << " " << gap.reason;
  EXPECT_EQ(verdict_word(Metric::loss_gap_vs_bf16, gap.verdict), "WORSE");
  EXPECT_NE(gap.baseline.find("+1.00 %"), std::string::npos) << gap.baseline;
  EXPECT_NE(gap.candidate.find("+10.00 %"), std::string::npos) << gap.candidate;
}

// Two nights say too little about how a GPU's nondeterministic training moves the gap (1.4 points
// between two unchanged H100 nights at 300 steps): no verdict before three.
TEST(NightlyRatios, ALossGapNeedsThreeNightsToBeJudged) {
  History h;
  History::RunSpec bf16, int8;
  int8.recipe = "int8-tensor";
  int8.median_ms = 80.0;
  int8.loss = 2.02;
  for (int night = 0; night < 2; ++night)
    h.sweep({bf16, int8});
  int8.loss = 2.2;
  const int64_t tonight = h.sweep({bf16, int8});
  const Comparison c = h.compare("nightly:7", fmt::format("sweep:{}", tonight));
  const MetricResult& gap = metric_of(group_of(c, "int8-tensor"), Metric::loss_gap_vs_bf16);
  EXPECT_EQ(gap.verdict, Verdict::unsure) << gap.reason;
  EXPECT_NE(gap.reason.find("3 needed"), std::string::npos) << gap.reason;
}

// A night on a GPU model the history never ran on is not judged against another GPU: it starts
// its own series, and compare says so (not enough data, exit 3).
TEST(NightlySeries, ANightOnAnotherGpuModelStartsANewSeries) {
  History h;
  five_nights(h);
  History::RunSpec other;
  other.gpu = "NVIDIA H200";
  const int64_t tonight = h.sweep({other});
  const Comparison c = h.compare("nightly:7", fmt::format("since:2026-11-{:02d}T00:00:00Z", 6));
  EXPECT_TRUE(c.groups.empty());
  bool said = false;
  for (const std::string& note : c.notes)
    said = said || (note.find("starts its own series") != std::string::npos &&
                    note.find("NVIDIA H200") != std::string::npos);
  EXPECT_TRUE(said) << render_compare_markdown(c);
  EXPECT_EQ(c.exit_code(), 3);
  (void)tonight;
}

TEST(NightlySeries, ARunThatFailsTonightNamesTheNightItBegan) {
  History h;
  for (int night = 0; night < 3; ++night)
    h.sweep({{}});
  History::RunSpec broken;
  broken.status = store::RunStatus::diverged;
  broken.commit = "deadbeef0000";
  const int64_t tonight = h.sweep({broken});
  const Comparison c = h.compare("nightly:7", fmt::format("sweep:{}", tonight));
  const MetricResult& status = metric(c, Metric::status);
  EXPECT_EQ(status.verdict, Verdict::regressed);
  EXPECT_NE(status.culprit.find(fmt::format("first bad night sweep {}", tonight)),
            std::string::npos)
      << status.culprit;
  EXPECT_NE(status.culprit.find("git log 0123456789ab..deadbeef0000"), std::string::npos)
      << status.culprit;
}

// The first bad night is the earliest of the bad nights that run up to tonight.
TEST(FirstBadNight, NamesTheEarliestOfTheTrailingBadNights) {
  using detail::Night;
  std::vector<Night> history;
  const std::vector<double> values{100, 101, 99, 100, 120, 121};
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string commit = fmt::format("c{}000000", i);
    history.push_back({static_cast<int64_t>(i + 1), fmt::format("2026-11-{:02d}T03:00", i + 1),
                       commit, values[i], values[i], values[i]});
  }
  const Night tonight{7, "2026-11-07T03:00", "c6000000", 122, 122, 122};
  const std::string text = detail::name_first_bad_night(history, {tonight});
  EXPECT_NE(text.find("first bad night sweep 5"), std::string::npos) << text;
  EXPECT_NE(text.find("last good night sweep 4"), std::string::npos) << text;
  EXPECT_NE(text.find("git log c3000000..c4000000"), std::string::npos) << text;

  history[4].commit = history[3].commit;  // nothing changed in the code between them
  EXPECT_NE(detail::name_first_bad_night(history, {tonight}).find("same commit"),
            std::string::npos);
  EXPECT_TRUE(detail::name_first_bad_night({}, {tonight}).empty());
}

}  // namespace
}  // namespace lpbench::reports
