// `--diagnostics` end to end: what a run stores for each quantized module (and not for the ones
// kept in BF16), the report's section, bad values, and the ablation switches checked through
// what the runs record.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/store/store.h"
#include "tests/support/process.h"
#include "tests/support/programs.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using testing::run_process;
using testing::TempDir;

const std::vector<std::string> kFigures{"amax", "scale", "sqnr_db", "clip_share", "flush_share"};
const std::vector<std::string> kOperands{"fprop.x",  "fprop.w", "dgrad.w",
                                         "dgrad.dy", "wgrad.x", "wgrad.dy"};

// "<module>.<gemm>.<operand>" of every diag.*.sqnr_db metric, per step.
std::map<int64_t, std::set<std::string>> diagnosed(const store::Store& store, int64_t run_id) {
  std::map<int64_t, std::set<std::string>> out;
  const std::string suffix = ".sqnr_db";
  for (const store::MetricRecord& m : store.metrics(run_id, "diag.")) {
    if (m.name.size() <= suffix.size() ||
        m.name.compare(m.name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    out[m.step].insert(m.name.substr(5, m.name.size() - 5 - suffix.size()));
  }
  return out;
}

std::map<std::string, store::RunRecord> runs_by_recipe(const store::Store& store) {
  std::map<std::string, store::RunRecord> out;
  for (const store::RunRecord& r : store.runs())
    out[r.recipe] = r;
  return out;
}

TEST(CliDiagnostics, ARunStoresEveryQuantizedModulesOperandsAtTheSampledSteps) {
  TempDir dir;
  const std::string db = dir / "diag.db";
  const auto run = run_process({LPBENCH_BINARY, "run", "--workload", "model:tiny", "--recipes",
                                "bf16,int8-tensor", "--steps", "6", "--diagnostics=2", "--device",
                                "cpu", "--db", db});
  ASSERT_EQ(run.exit_code, 0) << run.err;

  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto runs = runs_by_recipe(store);
  EXPECT_TRUE(store.metrics(runs.at("bf16").id, "diag.").empty());

  const store::RunRecord& int8 = runs.at("int8-tensor");
  std::set<std::string> expected;
  std::set<std::string> kept;
  for (const store::ModuleRecord& m : store.modules(int8.id)) {
    if (!m.quantized) {
      kept.insert(m.module);
      continue;
    }
    for (const std::string& operand : kOperands)
      expected.insert(m.module + "." + operand);
  }
  EXPECT_TRUE(kept.count("embedding") && kept.count("output"));
  ASSERT_FALSE(expected.empty());

  const auto steps = diagnosed(store, int8.id);
  // Every 2nd step from the first, and the last.
  ASSERT_EQ(steps.size(), 4U);
  for (int64_t step : {0, 2, 4, 5}) {
    ASSERT_TRUE(steps.count(step)) << step;
    EXPECT_EQ(steps.at(step), expected) << "step " << step;
  }
  for (const store::MetricRecord& m : store.metrics(int8.id, "diag.")) {
    for (const std::string& module : kept)
      EXPECT_EQ(m.name.find("diag." + module + "."), std::string::npos) << m.name;
    if (m.name.find(".sqnr_db") != std::string::npos) {
      EXPECT_GT(m.value, 0.0) << m.name;
      EXPECT_LT(m.value, 80.0) << m.name;
    }
    if (m.name.find("_share") != std::string::npos) {
      EXPECT_GE(m.value, 0.0) << m.name;
      EXPECT_LE(m.value, 1.0) << m.name;
    }
  }
  // Every figure of one operand, at one step.
  const std::string first = "diag." + *expected.begin() + ".";
  std::set<std::string> figures;
  for (const store::MetricRecord& m : store.metrics(int8.id, first)) {
    if (m.step == 0) figures.insert(m.name.substr(first.size()));
  }
  EXPECT_EQ(figures, std::set<std::string>(kFigures.begin(), kFigures.end()));

  // The sampled steps carry the diagnostics' cost: kept, out of the timing statistics.
  for (const store::StepRecord& s : store.steps(int8.id)) {
    if (steps.count(s.step)) {
      EXPECT_TRUE(s.warmup) << s.step;
    }
  }

  const auto report = run_process({LPBENCH_BINARY, "report", "--db", db});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("### Quantization diagnostics: model:tiny"), std::string::npos)
      << report.out;
  EXPECT_NE(report.out.find("SQNR dB first → last"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("| int8-tensor |"), std::string::npos) << report.out;

  if (!testing::find_on_path({"gnuplot"})) GTEST_SKIP() << "no gnuplot for the --out report";
  const std::string out = dir / "out";
  const auto page = run_process({LPBENCH_BINARY, "report", "--db", db, "--out", out});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  for (const char* file : {"sweep-1-diagnostics-sqnr.svg", "sweep-1-diagnostics-flushed.svg"})
    EXPECT_TRUE(testing::exists(out + "/" + file)) << file;
  const std::string md = testing::read_file(out + "/report.md");
  EXPECT_NE(md.find("### Quantization diagnostics: model:tiny"), std::string::npos) << md;
}

TEST(CliDiagnostics, TheFlagAloneSamplesEveryFiftyStepsAndTheLast) {
  TempDir dir;
  const std::string db = dir / "alone.db";
  const auto run = run_process({LPBENCH_BINARY, "run", "--workload", "model:tiny", "--recipes",
                                "int8-row", "--steps", "3", "--seq-len", "16", "--diagnostics",
                                "--device", "cpu", "--db", db});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto steps = diagnosed(store, store.runs().at(0).id);
  std::set<int64_t> sampled;
  for (const auto& [step, keys] : steps)
    sampled.insert(step);
  EXPECT_EQ(sampled, (std::set<int64_t>{0, 2}));
}

TEST(CliDiagnostics, BadValuesAreOneLineAndExitTwo) {
  TempDir dir;
  const std::string db = dir / "untouched.db";
  for (const std::string command : {"run", "converge"}) {
    for (const std::string value : {"0", "-3", "abc", "2.5"}) {
      const auto result = run_process(
          {LPBENCH_BINARY, command, "--diagnostics=" + value, "--device", "cpu", "--db", db});
      EXPECT_EQ(result.exit_code, 2) << command << " " << value << ": " << result.err;
      EXPECT_NE(result.err.find("--diagnostics"), std::string::npos) << result.err;
      EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    }
  }
  EXPECT_FALSE(testing::exists(db));
}

TEST(CliDiagnostics, ConvergeRecordsDiagnosticsToo) {
  TempDir dir;
  const std::string db = dir / "converge.db";
  const auto run = run_process({LPBENCH_BINARY, "converge", "--model", "tiny", "--recipes",
                                "bf16,int8-block", "--steps", "4", "--seq-len", "16",
                                "--diagnostics=3", "--device", "cpu", "--db", db});
  ASSERT_LE(run.exit_code, 1) << run.err;  // 1: not at parity after 4 steps is allowed
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto runs = runs_by_recipe(store);
  const auto steps = diagnosed(store, runs.at("int8-block").id);
  std::set<int64_t> sampled;
  for (const auto& [step, keys] : steps)
    sampled.insert(step);
  EXPECT_EQ(sampled, (std::set<int64_t>{0, 3}));
  EXPECT_TRUE(diagnosed(store, runs.at("bf16").id).empty());
}

// The ablation switches change exactly the modules and GEMMs they name, as the runs record them:
// the module decisions (run_modules) and the operands that were quantized (diagnostics).
TEST(CliDiagnostics, AblationSwitchesChangeExactlyWhatTheyName) {
  TempDir dir;
  const std::string db = dir / "ablation.db";
  const auto run = run_process(
      {LPBENCH_BINARY, "run", "--workload", "model:tiny", "--recipes",
       "int8-tensor,int8-tensor:wgrad=bf16,int8-tensor:dgrad=bf16,int8-tensor:quantize-all",
       "--steps", "1", "--seq-len", "16", "--diagnostics=1", "--device", "cpu", "--db", db});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto runs = runs_by_recipe(store);

  auto modules = [&](const std::string& recipe) {
    std::map<std::string, store::ModuleRecord> out;
    for (const store::ModuleRecord& m : store.modules(runs.at(recipe).id))
      out[m.module] = m;
    return out;
  };
  auto operands = [&](const std::string& recipe) {
    return diagnosed(store, runs.at(recipe).id).at(0);
  };
  const auto base_modules = modules("int8-tensor");
  const auto base = operands("int8-tensor");

  // wgrad=bf16 / dgrad=bf16: the same modules quantized, that GEMM in BF16 in each, and
  // exactly that GEMM's operands gone.
  for (const std::string gemm : {"wgrad", "dgrad"}) {
    const std::string recipe = "int8-tensor:" + gemm + "=bf16";
    const auto changed = modules(recipe);
    ASSERT_EQ(changed.size(), base_modules.size());
    for (const auto& [name, m] : base_modules) {
      EXPECT_EQ(changed.at(name).quantized, m.quantized) << recipe << " " << name;
      if (!m.quantized) {
        EXPECT_EQ(changed.at(name).gemms, m.gemms) << recipe << " " << name;
        continue;
      }
      EXPECT_NE(changed.at(name).gemms.find(gemm + "=bf16"), std::string::npos)
          << recipe << " " << name << ": " << changed.at(name).gemms;
    }
    std::set<std::string> expected;
    for (const std::string& key : base) {
      if (key.find("." + gemm + ".") == std::string::npos) expected.insert(key);
    }
    EXPECT_EQ(operands(recipe), expected) << recipe;
  }

  // quantize-all: the output layer is quantized too, nothing else changes (the embedding is a
  // lookup with no GEMM to quantize); the output layer's six operands join the diagnostics.
  const auto all = modules("int8-tensor:quantize-all");
  ASSERT_EQ(all.size(), base_modules.size());
  std::set<std::string> changed;
  for (const auto& [name, m] : base_modules) {
    if (all.at(name).quantized != m.quantized || all.at(name).gemms != m.gemms)
      changed.insert(name);
  }
  EXPECT_EQ(changed, (std::set<std::string>{"output"}));
  EXPECT_TRUE(all.at("output").quantized);
  std::set<std::string> expected = base;
  for (const std::string& operand : kOperands)
    expected.insert("output." + operand);
  EXPECT_EQ(operands("int8-tensor:quantize-all"), expected);
}

}  // namespace
}  // namespace lpbench
