#include "harness/kernel_bench/kernel_suite.h"

#include <benchmark/benchmark.h>
#include <c10/core/DeviceGuard.h>
#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <regex>

#include "base/env/time_stamp.h"
#include "base/errors.h"
#include "base/stats/stats.h"
#include "base/store/store.h"
#include "harness/cli/parse_command_line.h"
#include "harness/config/run_config.h"
#include "harness/env/provenance_probe.h"
#include "harness/kernel_bench/case_runner.h"
#include "harness/kernel_bench/case_table.h"
#include "harness/kernel_bench/result_record.h"
#include "harness/timing/step_timer.h"
#include "kernels/torch/scaled_gemm.h"

namespace lpbench::kernel_bench {

namespace {

struct Options {
  std::vector<std::string> models;
  std::vector<int64_t> tokens{4096};
  std::vector<std::string> recipes;
  std::vector<std::string> ops{"gemm", "quantize"};
  std::vector<std::string> variants{"prequantized", "with_quantization"};
  std::string device = "auto";
  int64_t iterations = 10;
  int64_t warmup = 2;
  int64_t buffer_sets = 0;
  std::string int8_gemm = "auto";
  uint64_t seed = 1234;
  std::string db;
  std::string label;
  bool list = false;
};

// Everything the registered benchmarks share: the cases, what happened to each, and the one
// case kept prepared (its buffers freed when the next case starts).
struct Suite {
  Options options;
  std::vector<KernelCase> cases;
  std::vector<CaseOutcome> outcomes;
  std::map<std::string, size_t> by_name;
  DeviceInfo device;
  SuiteSettings settings;
  std::optional<store::Store> db;  // with --db
  int64_t sweep_id = 0;
  std::unique_ptr<PreparedCase> prepared;
  size_t prepared_index = 0;

  void write(size_t index) {
    CaseOutcome& outcome = outcomes[index];
    if (outcome.written) return;
    outcome.written = true;
    if (!db) return;
    db->add_kernel_result(make_record(cases[index], outcome, settings, sweep_id, device.gpu_name));
  }
};

Suite* g_suite = nullptr;

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

void fail(benchmark::State& state, CaseOutcome& outcome, std::string status, std::string reason) {
  outcome.status = std::move(status);
  outcome.reason = std::move(reason);
  outcome.samples_ms.clear();
  state.SkipWithError(outcome.reason.c_str());
}

// Prepares (and validates) case `index` unless it is the one already prepared; false when it
// cannot be timed, with the outcome saying why.
bool prepare(Suite& suite, size_t index, benchmark::State& state) {
  CaseOutcome& outcome = suite.outcomes[index];
  if (suite.prepared && suite.prepared_index == index) return true;
  suite.prepared.reset();
  const KernelCase& c = suite.cases[index];
  const int64_t sets = buffer_sets_for(c, suite.device, suite.options.buffer_sets);
  outcome.buffer_sets = sets;
  if (const auto why = unsupported_reason(c, suite.device, sets)) {
    fail(state, outcome, "skipped", *why);
    return false;
  }
  try {
    auto prepared = std::make_unique<PreparedCase>(c, suite.device, sets, suite.options.seed);
    outcome.backend = prepared->backend();
    outcome.check = prepared->check();
    if (!prepared->check().ok) {
      fail(state, outcome, "failed", prepared->check().reason);
      return false;
    }
    for (int64_t i = 0; i < suite.options.warmup; ++i)
      prepared->run_pass();
    suite.prepared = std::move(prepared);
    suite.prepared_index = index;
    return true;
  } catch (const std::exception& error) {
    fail(state, outcome, "failed", "error while preparing: " + first_line(error.what()));
    return false;
  }
}

void run_case(benchmark::State& state, size_t index) {
  Suite& suite = *g_suite;
  CaseOutcome& outcome = suite.outcomes[index];
  // A case that could not run in an earlier repetition is not tried again.
  if (outcome.status != "ok") {
    state.SkipWithError(outcome.reason.c_str());
    return;
  }
  const c10::OptionalDeviceGuard guard(suite.device.device.is_cuda()
                                           ? std::optional<c10::Device>(suite.device.device)
                                           : std::nullopt);
  if (!prepare(suite, index, state)) return;
  PreparedCase& prepared = *suite.prepared;
  const size_t first = outcome.samples_ms.size();
  try {
    timing::StepTimer timer(suite.device.device);
    for (auto _ : state) {
      // One iteration calls the work once on every buffer set, back to back, so the device
      // never waits on the host between calls; the figure is the mean per call.
      timer.start();
      prepared.run_pass();
      const double ms = timer.stop_ms() / static_cast<double>(prepared.sets());
      outcome.samples_ms.push_back(ms);
      state.SetIterationTime(ms / 1e3);
    }
  } catch (const std::exception& error) {
    suite.prepared.reset();
    fail(state, outcome, "failed", "error while timing: " + first_line(error.what()));
    return;
  }
  const std::vector<double> mine(outcome.samples_ms.begin() + static_cast<std::ptrdiff_t>(first),
                                 outcome.samples_ms.end());
  const double seconds = stats::summarize(mine).median / 1e3;
  const KernelCase& c = suite.cases[index];
  if (seconds > 0) {
    if (c.op == Op::gemm)
      state.counters[c.integer() ? "TOP/s" : "TFLOP/s"] = c.flops() / seconds / 1e12;
    state.counters["GB/s"] = c.bytes() / seconds / 1e9;
  }
  state.counters["sets"] = static_cast<double>(prepared.sets());
}

// Google Benchmark's console output, and a row in the store for each case once its last
// repetition has run (so an interrupted suite keeps every finished case).
class StoreReporter : public benchmark::ConsoleReporter {
 public:
  StoreReporter(Suite& suite, OutputOptions options)
      : benchmark::ConsoleReporter(options), suite_(suite) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    benchmark::ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      const auto it = suite_.by_name.find(run.run_name.function_name);
      if (it == suite_.by_name.end()) continue;
      CaseOutcome& outcome = suite_.outcomes[it->second];
      ++outcome.repetitions_seen;
      // Used only where the case was timed (a failed case records no time at all).
      outcome.cpu_seconds += run.cpu_accumulated_time;
      outcome.cpu_iterations += run.iterations;
      if (outcome.status != "ok" || outcome.repetitions_seen >= run.repetitions) {
        suite_.write(it->second);
      }
    }
  }

 private:
  Suite& suite_;
};

template <typename T, typename F>
std::vector<T> parse_list(const std::vector<std::string>& texts, F parse) {
  std::vector<T> out;
  for (const std::string& text : texts)
    out.push_back(parse(text));
  return out;
}

// Google Benchmark's filter, as it applies it: a regular expression searched in the name, or
// its negation with a leading '-'.
bool matches_filter(const std::string& name, const std::string& filter) {
  if (filter.empty() || filter == "." || filter == "all") return true;
  const bool negate = filter[0] == '-';
  const std::regex re(negate ? filter.substr(1) : filter, std::regex::extended);
  return std::regex_search(name, re) != negate;
}

void print_list(const std::vector<KernelCase>& cases) {
  const std::string filter = benchmark::GetBenchmarkFilter();
  size_t width = 4;
  for (const KernelCase& c : cases)
    width = std::max(width, c.name.size());
  fmt::print("{:<{}}  {:>7}  {:>7}  {:>7}  {:<12}  {}\n", "name", width, "m", "n", "k", "recipe",
             "variant");
  for (const KernelCase& c : cases) {
    if (!matches_filter(c.name, filter)) continue;
    fmt::print("{:<{}}  {:>7}  {:>7}  {:>7}  {:<12}  {}\n", c.name, width, c.m, c.n, c.k, c.recipe,
               to_string(c.variant));
  }
}

void add_options(CLI::App& app, Options& o) {
  app.add_option("--models", o.models,
                 "Models whose linear shapes to measure (default: the six seed models)")
      ->delimiter(',');
  app.add_option("--tokens", o.tokens, "Token counts (M of fprop and dgrad, K of wgrad)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--recipes", o.recipes,
                 "Recipes (default: bf16,int8-tensor,int8-row,int8-block,fp8-tensor); bf16 always "
                 "runs, as the twin of every quantized case")
      ->delimiter(',');
  app.add_option("--ops", o.ops, "gemm, quantize")->delimiter(',')->capture_default_str();
  app.add_option("--variants", o.variants,
                 "Quantized GEMM variants: prequantized, with_quantization")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--iterations", o.iterations,
                 "Timed iterations per repetition (each calls the case once per buffer set); "
                 "repetitions: --benchmark_repetitions")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed passes over the buffer sets before timing")
      ->capture_default_str();
  app.add_option("--buffer-sets", o.buffer_sets,
                 "Input sets rotated through (default: enough to hold twice the GPU's L2, at "
                 "least 2; 2 on the CPU)");
  app.add_option(
         "--int8-gemm", o.int8_gemm,
         "INT8 GEMM: auto (wgmma on sm_90 where it takes the operands, else cublaslt), "
         "cublaslt, lpbench, torch (tensorwise and rowwise scales), wgmma (sm_90: also block "
         "scales)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the random operands")->capture_default_str();
  app.add_option("--db", o.db, "Write each case's row into this SQLite database, as a new sweep");
  app.add_option("--label", o.label, "Label of the sweep (with --db)");
  app.add_flag("--list", o.list, "Print the cases (name, m, n, k, recipe, variant) and exit");
}

constexpr const char* kBenchmarkFlags =
    "\nGoogle Benchmark's own flags are accepted too, among them:\n"
    "  --benchmark_filter=REGEX       only the cases whose name matches (also filters --list)\n"
    "  --benchmark_repetitions=N      repeat each case N times (the store keeps every sample)\n"
    "  --benchmark_out=FILE.json      Google Benchmark's JSON, beside the store's rows\n"
    "  --benchmark_out_format=json|console|csv\n"
    "  --benchmark_enable_random_interleaving=true\n";

void check_options(const Options& o) {
  if (o.iterations < 1) throw InputError("--iterations must be 1 or more");
  if (o.warmup < 0) throw InputError("--warmup must be 0 or more");
  if (o.buffer_sets < 0 || o.buffer_sets > kMaxBufferSets) {
    throw InputError(fmt::format("--buffer-sets must be between 1 and {} (0: from the L2 size)",
                                 kMaxBufferSets));
  }
  if (!kernels::int8_backend_named(o.int8_gemm)) {
    throw InputError(
        fmt::format("unknown --int8-gemm '{}'; valid: {}", o.int8_gemm, kernels::kInt8GemmNames));
  }
  if (!o.label.empty() && o.db.empty()) {
    throw InputError("--label names the sweep written with --db; give --db FILE too");
  }
}

std::string command_line(int argc, char** argv, const std::string& program) {
  std::string line = program;
  for (int i = 1; i < argc; ++i)
    line += std::string(" ") + argv[i];
  return line;
}

}  // namespace

int kernel_suite_main(int argc, char** argv, const std::string& program) {
  Options options;
  CLI::App app{
      "Kernel benchmarks: each model's linear GEMMs (fprop, dgrad, wgrad) under each "
      "recipe, and the quantize kernels, timed by Google Benchmark",
      program};
  add_options(app, options);
  app.footer(kBenchmarkFlags);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      fmt::print("{}", app.help());
      return 0;
    }
  }
  const std::string line = command_line(argc, argv, program);
  // Google Benchmark takes its flags out of argv; what is left is lpbench's.
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  int remaining = argc;
  benchmark::Initialize(&remaining, args.data());
  try {
    cli::parse_command_line(app, remaining, args.data());
  } catch (const CLI::ParseError& error) {
    throw InputError(fmt::format("{}; see {} --help", error.what(), program));
  }
  check_options(options);

  CaseFilter filter;
  filter.models = options.models;
  filter.tokens = options.tokens;
  filter.recipes = options.recipes;
  filter.ops = parse_list<Op>(options.ops, parse_op);
  filter.variants = parse_list<Variant>(options.variants, parse_variant);
  Suite suite;
  suite.options = options;
  suite.cases = kernel_cases(filter);
  if (options.list) {
    print_list(suite.cases);
    return 0;
  }

  suite.device = device_info(config::resolve_device(options.device));
  kernels::set_int8_backend(*kernels::int8_backend_named(options.int8_gemm));
  const env::Provenance provenance = env::collect_provenance(suite.device.device);
  suite.settings.device = suite.device.device.str();
  suite.settings.timer = suite.device.device.is_cuda() ? "cuda-events" : "host-clock";
  suite.settings.l2_bytes = suite.device.l2_bytes;
  suite.settings.iterations = options.iterations;
  suite.settings.warmup_passes = options.warmup;
  suite.settings.int8_gemm = options.int8_gemm;
  suite.settings.git_commit = provenance.git_commit + (provenance.git_dirty ? "-dirty" : "");
  suite.settings.torch_version = provenance.torch_version;
  if (!options.db.empty()) {
    suite.db.emplace(store::Store::open(options.db, store::Store::Mode::write));
    store::SweepRecord sweep{
        0, env::utc_now_iso8601(), line, provenance.host, provenance.lpbench_version, std::nullopt};
    if (!options.label.empty()) sweep.label = options.label;
    suite.sweep_id = suite.db->add_sweep(sweep);
  }

  suite.outcomes.resize(suite.cases.size());
  g_suite = &suite;
  for (size_t i = 0; i < suite.cases.size(); ++i) {
    suite.by_name[suite.cases[i].name] = i;
    benchmark::RegisterBenchmark(suite.cases[i].name.c_str(),
                                 [i](benchmark::State& state) { run_case(state, i); })
        ->UseManualTime()
        ->Iterations(options.iterations)
        ->Unit(benchmark::kMillisecond);
  }
  StoreReporter reporter(suite, isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Color
                                                      : benchmark::ConsoleReporter::OO_None);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  // Cases whose last repetition never reached the reporter (an error mid-way) still get a row.
  bool failed = false;
  for (size_t i = 0; i < suite.cases.size(); ++i) {
    const CaseOutcome& outcome = suite.outcomes[i];
    if (outcome.repetitions_seen > 0 || !outcome.samples_ms.empty() || outcome.status != "ok") {
      suite.write(i);
    }
    failed = failed || outcome.status == "failed";
  }
  suite.prepared.reset();
  g_suite = nullptr;
  benchmark::ClearRegisteredBenchmarks();
  benchmark::Shutdown();
  if (suite.db) {
    fmt::print("Wrote {} kernel results to {} (sweep {})\n",
               suite.db->kernel_results(suite.sweep_id).size(), options.db, suite.sweep_id);
  }
  return failed ? 1 : 0;
}

}  // namespace lpbench::kernel_bench
