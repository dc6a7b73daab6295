#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/env/provenance.h"

// The rows of the store, as typed values. Names carry units where they have one.
namespace lpbench::store {

// running → ok | diverged | oom | failed; a run left `running` by a process that is gone is
// interrupted.
enum class RunStatus { running, ok, diverged, oom, failed, interrupted };

std::string_view to_string(RunStatus status);
RunStatus parse_run_status(std::string_view text);  // throws StoreError for an unknown value

struct SweepRecord {
  int64_t id = 0;
  std::string started_at;
  std::string command_line;
  std::string host;
  std::string lpbench_version;
  std::optional<std::string> label;  // e.g. "nightly"
};

struct RunRecord {
  int64_t id = 0;
  int64_t sweep_id = 0;
  std::string workload;
  std::string recipe;
  std::string device;
  std::optional<std::string> int8_backend;
  std::string config_json;
  RunStatus status = RunStatus::running;
  std::optional<std::string> error;
  std::string started_at;
  std::optional<std::string> finished_at;
  int64_t pid = 0;
  std::string process_start;
  env::Provenance provenance;
  int64_t tokens_per_step = 0;
  // What was measured: the level and model of `workload`, the depth run and the published one
  // (a pruned run is never mistaken for the full model), the data, the memory plan's estimate.
  std::string level;
  std::string model;
  std::optional<int64_t> layers_run;
  std::optional<int64_t> layers_published;
  std::optional<std::string> data;
  std::optional<double> memory_estimate_gib;
  std::optional<bool> clock_fell;  // measured steps ran at a lower SM clock at the end
  // Why the run counts as measured on a busy machine (other processes' CPU time, other processes
  // on its GPU); none when it does not, or for runs of databases older than the check.
  std::optional<std::string> contention;
  // Data parallel: the ranks that trained the run and how they shared the state (NULL: one
  // process).
  int64_t world_size = 1;
  std::optional<std::string> sharding;
};

// Whether a backend name says products ran on the CPU (the reference's emulation of a GPU path,
// or torch's CPU matmul): every name lpbench writes for a CPU path starts with "cpu-"
// ("cpu-reference", "cpu-reference+residual", "cpu-aten-mm"; "cpu-exact" in lpbench 0.1), and a
// run whose GEMMs differ records "fprop: <name>; dgrad: <name>; wgrad: <name>", emulated where
// any of them is.
bool emulated_on_cpu(std::string_view backend);
// A run whose quantized products were emulated on the CPU: its numerics are the GPU path's, its
// times are not a hardware figure. Every table that prints a time marks such runs.
bool products_emulated(const RunRecord& run);

struct StepRecord {
  int64_t run_id = 0;
  int64_t step = 0;
  bool warmup = false;
  double loss = 0.0;  // NaN is stored as NULL and read back as NaN
  double step_ms = 0.0;
  int64_t tokens = 0;
  double lr = 0.0;
  double grad_norm = 0.0;
  std::optional<double> peak_mem_gib;
  std::optional<double> peak_reserved_gib;
  // The GPU's SM clock as the step ran: NVML's reading while its last kernels ran, which NVML
  // renews about every 0.1 s (for a shorter step, the clock of the steps around it).
  std::optional<double> sm_clock_mhz;
};

struct EvalRecord {
  int64_t run_id = 0;
  int64_t step = 0;
  double val_loss = 0.0;  // NaN is stored as NULL and read back as NaN
  int64_t tokens = 0;
};

struct EventRecord {
  int64_t id = 0;
  int64_t run_id = 0;
  std::optional<int64_t> step;
  std::string kind;
  std::string detail;
  std::string at;
};

struct MetricRecord {
  int64_t run_id = 0;
  int64_t step = 0;
  std::string name;
  double value = 0.0;
};

// The step metric of a GPU step during which the caching allocator found too little free device
// memory and released its cache to retry an allocation: how many times it did (recorded only
// where it did). Such a step's time includes the release and the allocations after it.
inline constexpr const char* kAllocationRetriesMetric = "allocator_retries";

// One data-parallel rank's figures of a run, gathered by rank 0 at the run's end.
struct RankRecord {
  int64_t run_id = 0;
  int64_t rank = 0;
  std::optional<double> step_ms;
  std::optional<double> peak_mem_gib;
  std::optional<double> comm_ms;
};

struct RegionRecord {
  int64_t run_id = 0;
  int64_t step = 0;
  std::string name;
  int64_t calls = 0;
  double total_ms = 0.0;
};

struct DeviceSampleRecord {
  int64_t run_id = 0;
  std::string phase;  // first_measured, end
  std::optional<int64_t> step;
  std::optional<double> sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
  std::optional<int64_t> throttle_reasons;
  std::string throttle_text;
  std::string at;
};

// How busy the machine was at a run's start and end (load_samples).
struct LoadSampleRecord {
  int64_t run_id = 0;
  std::string phase;  // start, end
  std::optional<double> load_1m;
  int64_t cpu_count = 0;
  std::optional<double> others_cpu_share;  // end: other processes' share of all CPUs' time
  std::optional<double> gpu_utilization_pct;
  std::optional<int64_t> gpu_other_processes;
  std::string at;
};

struct ArtifactRecord {
  int64_t id = 0;
  int64_t run_id = 0;
  std::string kind;
  std::optional<int64_t> step;
  std::string path;
  std::optional<std::string> detail;
};

struct KernelResultRecord {
  int64_t id = 0;
  int64_t sweep_id = 0;
  std::string name;
  std::string op;
  std::optional<std::string> model, part, gemm;
  std::string recipe;
  std::string variant;
  std::string backend;
  int64_t m = 0, n = 0, k = 0;
  std::string status;  // ok, failed, skipped
  std::optional<std::string> reason;
  int64_t samples = 0;
  std::optional<double> median_ms, p10_ms, p90_ms, tflops, gb_s;
  std::optional<std::string> gpu_name;
  std::string config_json;
  std::optional<double> mean_ms;       // over the timed calls
  std::optional<double> cpu_ms;        // this process's CPU time per call (Google Benchmark's)
  std::optional<int64_t> repetitions;  // Google Benchmark repetitions pooled into the samples
  // The timed samples themselves, written with the row; `kernel_results()` leaves this empty
  // (reports read the summary), `kernel_samples(id)` reads them.
  std::vector<double> samples_ms;
};

struct ModuleRecord {
  int64_t run_id = 0;
  std::string module;
  std::string kind;
  bool quantized = false;
  std::string gemms;
  std::string reason;
};

}  // namespace lpbench::store
