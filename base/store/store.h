#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/store/records.h"
#include "base/store/sqlite.h"

namespace lpbench::store {

// Which sweeps to read; an empty field matches every sweep.
struct SweepQuery {
  std::optional<std::string> label;
  std::optional<std::string> host;
  std::optional<std::string> started_from;  // ISO 8601 UTC, inclusive (timestamps sort as text)
};

// The lpbench database: the only code that speaks SQL. Every write is one BEGIN IMMEDIATE
// transaction, so a crash keeps every row written before it, and several processes can share a
// database (WAL, busy timeout).
class Store {
 public:
  enum class Mode {
    write,  // create if missing, migrate, and mark the runs of dead processes interrupted
    read,   // the file must exist; opened read-only unless its schema needs migrating
  };

  // Checks the path before touching anything: a file that is not a SQLite database, a schema
  // newer than this lpbench, or a path that cannot be written is an InputError, and the file is
  // left as it was.
  static Store open(const std::string& path, Mode mode);

  int schema_version() const;

  int64_t add_sweep(const SweepRecord& sweep);
  int64_t add_run(const RunRecord& run);  // status running; returns the run's id
  void add_modules(int64_t run_id, const std::vector<ModuleRecord>& modules);
  void add_step(const StepRecord& step);
  void add_eval(const EvalRecord& eval);
  int64_t add_event(const EventRecord& event);                 // `at` is filled in when empty
  void add_metrics(const std::vector<MetricRecord>& metrics);  // one transaction
  void add_regions(const std::vector<RegionRecord>& regions);  // one transaction
  void add_ranks(const std::vector<RankRecord>& ranks);        // one transaction
  void add_device_sample(const DeviceSampleRecord& sample);
  void add_load_sample(const LoadSampleRecord& sample);  // one per run and phase
  int64_t add_artifact(const ArtifactRecord& artifact);
  void set_clock_fell(int64_t run_id, bool fell);
  void set_contention(int64_t run_id, const std::optional<std::string>& contention);
  // The row and its samples_ms, in one transaction.
  int64_t add_kernel_result(const KernelResultRecord& result);
  void finish_run(int64_t run_id, RunStatus status, const std::optional<std::string>& error);
  // Marks `running` runs of this host whose process is gone as interrupted; returns how many.
  int mark_interrupted_runs();

  std::vector<SweepRecord> sweeps() const;
  // Sweeps that match every field given, in id order.
  std::vector<SweepRecord> sweeps(const SweepQuery& query) const;
  std::optional<SweepRecord> sweep(int64_t id) const;
  // Runs in id order (all, or one sweep's). A `running` run of this host whose process is gone
  // reads as interrupted even where nobody has written that yet.
  std::vector<RunRecord> runs(std::optional<int64_t> sweep_id = std::nullopt) const;
  std::optional<RunRecord> run(int64_t id) const;
  // Runs whose provenance git commit starts with `prefix`, in id order.
  std::vector<RunRecord> runs_of_commit(const std::string& prefix) const;
  std::vector<StepRecord> steps(int64_t run_id) const;
  std::vector<ModuleRecord> modules(int64_t run_id) const;
  std::vector<EvalRecord> evals(int64_t run_id) const;
  std::vector<EventRecord> events(int64_t run_id) const;
  // A run's metrics, all, or those whose name starts with `prefix`, by step then name.
  std::vector<MetricRecord> metrics(int64_t run_id, const std::string& prefix = "") const;
  std::vector<RegionRecord> regions(int64_t run_id) const;
  std::vector<RankRecord> ranks(int64_t run_id) const;  // by rank; empty for one process
  std::vector<DeviceSampleRecord> device_samples(int64_t run_id) const;
  std::vector<LoadSampleRecord> load_samples(int64_t run_id) const;
  std::vector<ArtifactRecord> artifacts(int64_t run_id) const;
  std::vector<KernelResultRecord> kernel_results(
      std::optional<int64_t> sweep_id = std::nullopt) const;
  // A kernel result's timed samples in the order timed; empty for rows written before schema 6.
  std::vector<double> kernel_samples(int64_t result_id) const;

 private:
  explicit Store(Connection connection) : connection_(std::move(connection)) {}
  Connection connection_;
};

}  // namespace lpbench::store
