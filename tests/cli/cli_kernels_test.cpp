// lpbench-kernels and `lpbench gemm` end to end on the CPU: the case list, a tiny run into the
// store and back, an unsupported case skipped with its reason, the report's kernel table.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "base/store/store.h"
#include "harness/kernel_bench/case_table.h"
#include "tests/support/process.h"
#include "tests/support/programs.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using testing::run_process;
using testing::TempDir;

std::vector<std::string> listed_names(const std::string& out) {
  std::vector<std::string> names;
  std::istringstream lines(out);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) {
    if (!line.empty()) names.push_back(line.substr(0, line.find(' ')));
  }
  return names;
}

TEST(CliKernels, ListsTheCasesOfTheCaseTable) {
  const auto list = run_process(
      {LPBENCH_KERNELS_BINARY, "--list", "--models", "llama2-7b", "--tokens", "4096,16384"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  kernel_bench::CaseFilter filter;
  filter.models = {"llama2-7b"};
  filter.tokens = {4096, 16384};
  std::vector<std::string> expected;
  for (const kernel_bench::KernelCase& c : kernel_bench::kernel_cases(filter))
    expected.push_back(c.name);
  EXPECT_EQ(listed_names(list.out), expected);
  EXPECT_NE(list.out.find("gemm/llama2-7b/output/fprop/T16384/int8-row/with_quantization"),
            std::string::npos);
  EXPECT_NE(list.out.find("16384    32000     4096"), std::string::npos) << "m, n, k columns";

  // The same program behind `lpbench gemm`, and Google Benchmark's filter applies to the list.
  const auto gemm = run_process({LPBENCH_BINARY, "gemm", "--list", "--models", "llama2-7b",
                                 "--benchmark_filter=down/wgrad/T4096/int8-block"});
  ASSERT_EQ(gemm.exit_code, 0) << gemm.err;
  EXPECT_EQ(
      listed_names(gemm.out),
      (std::vector<std::string>{"gemm/llama2-7b/down/wgrad/T4096/int8-block/prequantized",
                                "gemm/llama2-7b/down/wgrad/T4096/int8-block/with_quantization"}));
}

TEST(CliKernels, TinyCpuRunWritesRowsThatReadBackAndSkipsFp8WithItsReason) {
  const testing::ScopedEnv one_thread("OMP_NUM_THREADS", "1");
  TempDir dir;
  const std::string db = dir / "k.db";
  const std::string json = dir / "gb.json";
  const auto run = run_process({LPBENCH_KERNELS_BINARY,
                                "--models",
                                "tiny",
                                "--tokens",
                                "16",
                                "--recipes",
                                "int8-tensor,fp8-tensor",
                                "--device",
                                "cpu",
                                "--iterations",
                                "3",
                                "--warmup",
                                "1",
                                "--db",
                                db,
                                "--label",
                                "kernels",
                                "--benchmark_filter=(qkv|output)/fprop|quantize/.*/512x256",
                                "--benchmark_out=" + json,
                                "--benchmark_out_format=json"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  // Google Benchmark's console and JSON outputs stay.
  EXPECT_NE(run.out.find("gemm/tiny/qkv/fprop/T16/bf16/iterations:3/manual_time"),
            std::string::npos)
      << run.out;
  const std::string gb = testing::read_file(json);
  EXPECT_NE(gb.find("\"benchmarks\""), std::string::npos);
  EXPECT_NE(gb.find("gemm/tiny/output/fprop/T16/int8-tensor/prequantized"), std::string::npos);

  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps[0].label.value_or(""), "kernels");
  EXPECT_NE(sweeps[0].command_line.find("--tokens 16"), std::string::npos);
  const auto rows = store.kernel_results(sweeps[0].id);
  std::map<std::string, store::KernelResultRecord> by_name;
  for (const auto& r : rows)
    by_name[r.name] = r;
  // qkv and output fprop: bf16 + int8-tensor×2 + fp8-tensor×2 each; quantize of the 512×256
  // weights (qkv's and output's: one case per scheme): int8-tensor and fp8-tensor, each alone
  // and with its transpose from the same pass.
  EXPECT_EQ(rows.size(), 2u * 5 + 2 * 2) << run.out;

  const auto& ok = by_name.at("gemm/tiny/qkv/fprop/T16/int8-tensor/with_quantization");
  EXPECT_EQ(ok.status, "ok");
  EXPECT_FALSE(ok.reason);
  EXPECT_EQ(ok.op, "gemm");
  EXPECT_EQ(ok.part.value_or(""), "qkv");
  EXPECT_EQ(ok.gemm.value_or(""), "fprop");
  EXPECT_EQ(ok.variant, "with_quantization");
  EXPECT_EQ(ok.backend, "cpu-reference");
  EXPECT_EQ(std::tie(ok.m, ok.n, ok.k), std::make_tuple(16, 512, 256));
  EXPECT_EQ(ok.samples, 3);
  ASSERT_TRUE(ok.median_ms && ok.p10_ms && ok.p90_ms && ok.tflops && ok.gb_s);
  EXPECT_GT(*ok.median_ms, 0.0);
  EXPECT_LE(*ok.p10_ms, *ok.median_ms);
  EXPECT_LE(*ok.median_ms, *ok.p90_ms);
  EXPECT_NEAR(*ok.tflops, 2.0 * 16 * 512 * 256 / (*ok.median_ms / 1e3) / 1e12, 1e-9);
  EXPECT_FALSE(ok.gpu_name);
  EXPECT_NE(ok.config_json.find("\"timer\":\"host-clock\""), std::string::npos);
  EXPECT_NE(ok.config_json.find("\"validation\""), std::string::npos);

  for (const auto& [name, r] : by_name) {
    if (name.find("fp8-tensor") != std::string::npos) {
      EXPECT_EQ(r.status, "skipped") << name;
      ASSERT_TRUE(r.reason) << name;
      EXPECT_NE(r.reason->find("needs FP8 tensor cores"), std::string::npos) << *r.reason;
      EXPECT_FALSE(r.median_ms) << name << " was timed";
      EXPECT_EQ(r.samples, 0);
    } else {
      EXPECT_EQ(r.status, "ok") << name << ": " << r.reason.value_or("");
    }
  }
  // Skipped in Google Benchmark's console too, with the reason.
  EXPECT_NE(run.out.find("ERROR OCCURRED: 'fp8-tensor needs FP8 tensor cores"), std::string::npos)
      << run.out;
  const auto& quantize = by_name.at("quantize/tiny/512x256/int8-tensor/tensor");
  EXPECT_EQ(quantize.op, "quantize");
  EXPECT_FALSE(quantize.tflops);
  EXPECT_TRUE(quantize.gb_s);
  const auto& both = by_name.at("quantize/tiny/512x256/int8-tensor/tensor+transpose");
  EXPECT_EQ(both.status, "ok") << both.reason.value_or("");
  EXPECT_NE(both.config_json.find("\"with_transpose\":true"), std::string::npos)
      << both.config_json;
  EXPECT_NE(quantize.config_json.find("\"with_transpose\":false"), std::string::npos);

  // The report shows the kernel table with the speedup over the bf16 twin.
  const auto report = run_process({LPBENCH_BINARY, "report", "--db", db});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("### Kernel benchmarks: GEMMs"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("1.00× (twin)"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("### Kernel benchmarks: quantize"), std::string::npos);
  EXPECT_NE(report.out.find("needs FP8 tensor cores"), std::string::npos);
  EXPECT_EQ(report.out.find("No runs were recorded"), std::string::npos);

  // Exported in Google Benchmark's format: one benchmark per stored row with only what was
  // measured (the mean and this process's CPU time per call, the timed calls, the repetitions),
  // skipped rows as errors with their reason and no time; and as CSV, one line per row.
  const std::string out = dir / "export";
  const auto exported =
      run_process({LPBENCH_BINARY, "export", "--db", db, "--format", "gbench-json", "--out", out});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const auto doc = nlohmann::json::parse(testing::read_file(out + "/kernels.json"));
  ASSERT_EQ(doc.at("benchmarks").size(), rows.size());
  for (const auto& b : doc.at("benchmarks")) {
    const auto& r = by_name.at(b.at("name").get<std::string>());
    EXPECT_EQ(b.at("time_unit"), "ms");
    if (r.status == "ok") {
      ASSERT_TRUE(r.mean_ms && r.cpu_ms && r.repetitions) << r.name;
      EXPECT_DOUBLE_EQ(b.at("real_time").get<double>(), *r.mean_ms) << r.name;
      EXPECT_DOUBLE_EQ(b.at("cpu_time").get<double>(), *r.cpu_ms) << r.name;
      EXPECT_GT(*r.cpu_ms, 0.0) << r.name;  // measured: the CPU does the work here
      EXPECT_DOUBLE_EQ(b.at("median_ms").get<double>(), *r.median_ms) << r.name;
      EXPECT_EQ(b.at("iterations").get<int64_t>(), r.samples) << r.name;
      EXPECT_EQ(b.at("repetitions").get<int64_t>(), *r.repetitions) << r.name;
      EXPECT_FALSE(b.contains("error_occurred")) << r.name;
    } else {
      EXPECT_TRUE(b.at("error_occurred").get<bool>()) << r.name;
      EXPECT_EQ(b.at("error_message").get<std::string>(), r.reason.value_or("")) << r.name;
      EXPECT_FALSE(b.contains("real_time") || b.contains("cpu_time")) << r.name;
    }
  }
  const auto csv =
      run_process({LPBENCH_BINARY, "export", "--db", db, "--format", "csv", "--out", out});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const std::string kernels_csv = testing::read_file(out + "/kernels.csv");
  EXPECT_EQ(std::count(kernels_csv.begin(), kernels_csv.end(), '\n'),
            static_cast<std::ptrdiff_t>(rows.size() + 1));
  EXPECT_NE(kernels_csv.find("gemm/tiny/qkv/fprop/T16/int8-tensor/with_quantization"),
            std::string::npos);
}

// Google Benchmark's own comparison tool (tools/compare.py, Debian's libbenchmark-tools) reads
// the export of two kernel-suite runs and compares every timed case by its time and CPU time.
TEST(CliKernels, GoogleBenchmarksCompareReadsTheExport) {
  const std::string compare_py = "/usr/share/benchmark/compare.py";
  const auto python = testing::find_on_path({"python3"});
  if (access(compare_py.c_str(), R_OK) != 0 || !python) {
    GTEST_SKIP() << "no " << compare_py << " (scripts/setup installs libbenchmark-tools)";
  }
  const testing::ScopedEnv one_thread("OMP_NUM_THREADS", "1");
  TempDir dir;
  std::vector<std::string> files;
  for (const char* name : {"a", "b"}) {
    const std::string db = dir / (std::string(name) + ".db");
    const auto run = run_process({LPBENCH_KERNELS_BINARY, "--models", "tiny", "--tokens", "16",
                                  "--recipes", "int8-tensor", "--device", "cpu", "--iterations",
                                  "3", "--benchmark_filter=qkv/fprop", "--db", db});
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    const std::string out = dir / name;
    const auto exported = run_process(
        {LPBENCH_BINARY, "export", "--db", db, "--format", "gbench-json", "--out", out});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    files.push_back(out + "/kernels.json");
  }
  // Debian's python3 has the scipy that compare.py imports.
  const std::string interpreter =
      access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : *python;
  const auto compared = run_process({interpreter, compare_py, "benchmarks", files[0], files[1]});
  ASSERT_EQ(compared.exit_code, 0) << compared.out << compared.err;
  for (const char* name :
       {"gemm/tiny/qkv/fprop/T16/bf16", "gemm/tiny/qkv/fprop/T16/int8-tensor/prequantized",
        "gemm/tiny/qkv/fprop/T16/int8-tensor/with_quantization"}) {
    EXPECT_NE(compared.out.find(name), std::string::npos) << name << "\n" << compared.out;
  }
  EXPECT_NE(compared.out.find("Time"), std::string::npos) << compared.out;
  EXPECT_NE(compared.out.find("CPU"), std::string::npos) << compared.out;
}

TEST(CliKernels, ExportingKernelsFromADatabaseWithoutThemIsOneLineAndExitTwo) {
  TempDir dir;
  const std::string db = dir / "runs.db";
  const auto run = run_process({LPBENCH_BINARY, "run", "--workload", "gemm:16x16x16", "--recipes",
                                "bf16", "--steps", "2", "--device", "cpu", "--db", db});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto exported = run_process(
      {LPBENCH_BINARY, "export", "--db", db, "--format", "gbench-json", "--out", dir / "x"});
  EXPECT_EQ(exported.exit_code, 2);
  EXPECT_NE(exported.err.find("holds no kernel results"), std::string::npos) << exported.err;
  EXPECT_EQ(std::count(exported.err.begin(), exported.err.end(), '\n'), 1) << exported.err;
}

TEST(CliKernels, BadInputIsOneLineAndExitTwo) {
  TempDir dir;
  const std::string db = dir / "k.db";
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--tokens", "0"},
                                               {"--models", "llama9"},
                                               {"--recipes", "int4"},
                                               {"--variants", "later"},
                                               {"--iterations", "0"},
                                               {"--label", "x"},
                                               {"--no-such-flag"},
                                               {"--device", "cuda:x"}}) {
    std::vector<std::string> argv{LPBENCH_KERNELS_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    if (args[0] != "--label") argv.insert(argv.end(), {"--db", db});
    const auto result = run_process(argv);
    EXPECT_EQ(result.exit_code, 2) << args[0] << ": " << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.err.rfind("lpbench-kernels: error: ", 0), 0u) << result.err;
  }
  EXPECT_FALSE(testing::exists(db)) << "bad input must not touch the database";
}

}  // namespace
}  // namespace lpbench
