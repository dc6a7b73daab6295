// `lpbench report --out`: a report from a short CPU sweep, its tables checked against the store
// and its page opened in headless Chromium.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/store/store.h"
#include "tests/support/process.h"
#include "tests/support/programs.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using testing::exists;
using testing::read_file;
using testing::run_process;
using testing::TempDir;

// numpy's median, computed here rather than by the code under test.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// How many <svg> elements of a page hold a <path>.
int svgs_with_paths(const std::string& dom) {
  int count = 0;
  for (size_t at = dom.find("<svg"); at != std::string::npos; at = dom.find("<svg", at + 1)) {
    const size_t end = dom.find("</svg>", at);
    if (end != std::string::npos && dom.substr(at, end - at).find("<path") != std::string::npos) {
      ++count;
    }
  }
  return count;
}

TEST(CliReport, WritesTablesAndChartsAndThePageRendersInChromium) {
  // One thread: ctest runs tests side by side on CI's two cores, and OpenMP threads that spin
  // on an oversubscribed core made this sweep 25× slower (seen: 98 s instead of 4 s).
  const testing::ScopedEnv one_thread("OMP_NUM_THREADS", "1");
  TempDir dir;
  const std::string db = dir / "r.db";
  const auto run = run_process({LPBENCH_BINARY, "run", "--workload", "model:tiny", "--recipes",
                                "bf16,int8-tensor", "--steps", "20", "--device", "cpu", "--seq-len",
                                "16", "--label", "nightly", "--db", db});
  ASSERT_EQ(run.exit_code, 0) << run.err;

  const std::string out = dir / "out";
  const auto report = run_process({LPBENCH_BINARY, "report", "--db", db, "--out", out});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  for (const char* file : {"report.md", "report.html", "sweep-1-loss.svg", "sweep-1-loss-gap.svg",
                           "sweep-1-speedup.svg", "sweep-1-memory.svg", "nightly-step-ms.svg",
                           "nightly-tokens-per-s.svg"}) {
    EXPECT_TRUE(exists(out + "/" + file)) << file;
  }
  const std::string md = read_file(out + "/report.md");
  const std::string html = read_file(out + "/report.html");
  EXPECT_NE(md.find("![Loss per step, sweep 1](sweep-1-loss.svg)"), std::string::npos) << md;
  EXPECT_NE(md.find("Sweep 1 (nightly)"), std::string::npos) << md;
  EXPECT_NE(md.find("## Nightly history"), std::string::npos) << md;

  // The tables hold the stored numbers: each run's median step time and final loss.
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  ASSERT_EQ(store.sweeps().at(0).label, std::optional<std::string>("nightly"));
  for (const store::RunRecord& r : store.runs()) {
    const auto steps = store.steps(r.id);
    std::vector<double> times;
    for (const auto& s : steps) {
      if (!s.warmup) times.push_back(s.step_ms);
    }
    const std::string median_text = fmt::format("{:.2f} (", median(times));
    const double last2 = (steps[18].loss + steps[19].loss) / 2.0;  // the last 10 % of 20 steps
    const std::string loss_text = fmt::format("{:.4f}", last2);
    EXPECT_NE(md.find(median_text), std::string::npos) << r.recipe << " " << median_text << md;
    EXPECT_NE(md.find(loss_text), std::string::npos) << r.recipe << " " << loss_text;
    EXPECT_NE(html.find(median_text), std::string::npos) << r.recipe << " " << median_text;
    EXPECT_NE(html.find(loss_text), std::string::npos) << r.recipe << " " << loss_text;
  }
  // CPU runs record what torch's CPU allocator held, so the memory chart is drawn too.
  EXPECT_EQ(svgs_with_paths(html), 6);

  const std::optional<std::string> chromium =
      testing::find_on_path({"chromium", "chromium-browser", "google-chrome"});
  if (!chromium) GTEST_SKIP() << "no chromium on PATH (scripts/setup installs Debian's chromium)";
  // The page reports its own load errors and the charts it drew into a hidden footer; console
  // messages, if any, reach stderr through --enable-logging.
  const auto browser =
      run_process({*chromium, "--headless", "--no-sandbox", "--disable-gpu",
                   "--user-data-dir=" + (dir / "profile"), "--enable-logging=stderr", "--v=0",
                   "--dump-dom", "file://" + out + "/report.html"});
  ASSERT_EQ(browser.exit_code, 0) << browser.err;
  const std::string& dom = browser.out;
  EXPECT_NE(dom.find("data-charts=\"6\""), std::string::npos) << dom.substr(dom.size() - 600);
  EXPECT_NE(dom.find("data-drawn=\"6\""), std::string::npos) << dom.substr(dom.size() - 600);
  EXPECT_NE(dom.find("data-errors=\"0\""), std::string::npos) << dom.substr(dom.size() - 600);
  EXPECT_EQ(svgs_with_paths(dom), 6);
  EXPECT_EQ(browser.err.find(":CONSOLE"), std::string::npos) << browser.err;
}

// Validation after every step runs the model forward under the recipe (INT8 quantizes), outside
// the timed step: its regions belong to no step. Each step's regions are the same calls, and the
// BF16 run, which steps after INT8's evaluation when recipes interleave, has no quantize region.
TEST(CliReport, EvaluationsRegionsAreNotTakenIntoTheNextStep) {
  const testing::ScopedEnv one_thread("OMP_NUM_THREADS", "1");
  TempDir dir;
  const std::string db = dir / "r.db";
  const auto run = run_process({LPBENCH_BINARY, "run", "--workload", "model:tiny", "--recipes",
                                "int8-tensor,bf16", "--steps", "4", "--warmup-steps", "1",
                                "--eval-every", "1", "--device", "cpu", "--regions", "--db", db});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  for (const store::RunRecord& r : store.runs()) {
    SCOPED_TRACE(r.recipe);
    ASSERT_EQ(store.evals(r.id).size(), 4u);
    std::map<int64_t, int64_t> gemms;
    std::map<int64_t, int64_t> quantizes;
    for (const auto& region : store.regions(r.id)) {
      if (region.name == "gemm") gemms[region.step] = region.calls;
      if (region.name == "quantize") quantizes[region.step] = region.calls;
    }
    ASSERT_EQ(gemms.size(), 4u);
    for (const auto& [step, calls] : gemms)
      EXPECT_EQ(calls, gemms.at(0)) << "step " << step;
    if (r.recipe == "bf16") {
      EXPECT_TRUE(quantizes.empty());
    } else {
      ASSERT_EQ(quantizes.size(), 4u);
      for (const auto& [step, calls] : quantizes)
        EXPECT_EQ(calls, quantizes.at(0)) << "step " << step;
    }
  }
}

TEST(CliReport, HotspotsAndKernelTablesReachReportMdAndHtml) {
  const testing::ScopedEnv one_thread("OMP_NUM_THREADS", "1");
  TempDir dir;
  const std::string db = dir / "r.db";
  const auto run = run_process({LPBENCH_BINARY, "run", "--workload", "layer:tiny", "--recipes",
                                "bf16,int8-tensor", "--steps", "4", "--warmup-steps", "1",
                                "--device", "cpu", "--seq-len", "16", "--regions", "--db", db});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto gemm =
      run_process({LPBENCH_BINARY, "gemm", "--models", "tiny", "--tokens", "16", "--recipes",
                   "int8-tensor", "--device", "cpu", "--iterations", "3", "--warmup", "1", "--db",
                   db, "--benchmark_filter=qkv/fprop/T16/(bf16|int8-tensor/prequantized)"});
  ASSERT_EQ(gemm.exit_code, 0) << gemm.err;

  const std::string out = dir / "out";
  const auto report = run_process({LPBENCH_BINARY, "report", "--db", db, "--out", out});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string md = read_file(out + "/report.md");
  const std::string html = read_file(out + "/report.html");

  // The hotspots: the int8 run's mean quantize time per measured step, computed here from the
  // stored regions, appears in both files; BF16 has no quantize region.
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  const store::RunRecord& int8 = runs[0].recipe == "int8-tensor" ? runs[0] : runs[1];
  std::set<int64_t> measured;
  for (const auto& step : store.steps(int8.id)) {
    if (!step.warmup) measured.insert(step.step);
  }
  double quantize_ms = 0.0;
  for (const auto& r : store.regions(int8.id)) {
    if (r.name == "quantize" && measured.count(r.step)) quantize_ms += r.total_ms;
  }
  ASSERT_GT(quantize_ms, 0.0);
  const std::string quantize_cell = fmt::format("{:.3f} (", quantize_ms / measured.size());
  for (const std::string* file : {&md, &html}) {
    EXPECT_NE(file->find("Hotspots: layer:tiny"), std::string::npos) << *file;
    EXPECT_NE(file->find(quantize_cell), std::string::npos) << quantize_cell << "\n" << *file;
    EXPECT_NE(file->find("regions nest"), std::string::npos);
  }
  const size_t row = md.find("| quantize");
  ASSERT_NE(row, std::string::npos) << md;
  const std::string line = md.substr(row, md.find('\n', row) - row);
  EXPECT_NE(line.find("— |"), std::string::npos) << line;  // the bf16 column

  // The kernel suite's sweep: its table with the stored median and the bf16 twin, not "no runs".
  const auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 2u);
  const auto kernels = store.kernel_results(sweeps[1].id);
  ASSERT_EQ(kernels.size(), 2u);
  for (const auto& k : kernels) {
    ASSERT_EQ(k.status, "ok") << k.name;
    const std::string median_cell = fmt::format("{:.3f} (", *k.median_ms);
    EXPECT_NE(md.find(median_cell), std::string::npos) << k.name << " " << median_cell;
    EXPECT_NE(html.find(median_cell), std::string::npos) << k.name << " " << median_cell;
  }
  for (const std::string* file : {&md, &html}) {
    EXPECT_NE(file->find("Kernel benchmarks: GEMMs"), std::string::npos) << *file;
    EXPECT_NE(file->find("1.00× (twin)"), std::string::npos);
    EXPECT_NE(file->find("their times are not a hardware"), std::string::npos);
    EXPECT_NE(file->find("cpu-aten-mm †"), std::string::npos);  // the CPU rows are marked
    EXPECT_EQ(file->find("No runs were recorded"), std::string::npos);
  }
}

TEST(CliReport, WithoutGnuplotOutStopsWithOneLineAndWritesNothing) {
  TempDir dir;
  const std::string db = dir / "r.db";
  store::Store::open(db, store::Store::Mode::write);
  const std::string before = read_file(db);
  const testing::ScopedEnv no_programs("PATH", dir / "empty-path");
  const auto report = run_process({LPBENCH_BINARY, "report", "--db", db, "--out", dir / "out"});
  EXPECT_EQ(report.exit_code, 2);
  EXPECT_EQ(std::count(report.err.begin(), report.err.end(), '\n'), 1) << report.err;
  EXPECT_NE(report.err.find("gnuplot"), std::string::npos) << report.err;
  EXPECT_FALSE(exists(dir / "out"));
  EXPECT_EQ(read_file(db), before);
}

}  // namespace
}  // namespace lpbench
