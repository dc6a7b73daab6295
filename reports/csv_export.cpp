#include "reports/csv_export.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <vector>

namespace lpbench::reports {

namespace {

std::string csv_cell(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// One CSV row, built cell by cell.
class Row {
 public:
  Row& text(std::string_view value) { return add(csv_cell(value)); }
  Row& maybe(const std::optional<std::string>& value) { return add(value ? csv_cell(*value) : ""); }
  Row& integer(int64_t value) { return add(std::to_string(value)); }
  Row& integer(const std::optional<int64_t>& value) {
    return add(value ? std::to_string(*value) : "");
  }
  // fmt's shortest representation reads back to the same double.
  Row& number(double value) { return add(std::isfinite(value) ? fmt::format("{}", value) : ""); }
  Row& number(const std::optional<double>& value) { return number(value.value_or(NAN)); }
  Row& flag(bool value) { return add(value ? "1" : "0"); }
  std::string line() const { return cells_ + "\r\n"; }

 private:
  Row& add(const std::string& cell) {
    cells_ += (first_ ? "" : ",") + cell;
    first_ = false;
    return *this;
  }
  std::string cells_;
  bool first_ = true;
};

std::string header(std::initializer_list<std::string_view> names) {
  Row row;
  for (std::string_view name : names)
    row.text(name);
  return row.line();
}

}  // namespace

std::string sweeps_csv(const store::Store& store) {
  std::string out =
      header({"id", "started_at", "label", "host", "lpbench_version", "command_line"});
  for (const store::SweepRecord& s : store.sweeps()) {
    out += Row()
               .integer(s.id)
               .text(s.started_at)
               .maybe(s.label)
               .text(s.host)
               .text(s.lpbench_version)
               .text(s.command_line)
               .line();
  }
  return out;
}

std::string runs_csv(const store::Store& store) {
  std::string out = header({"id",
                            "sweep_id",
                            "workload",
                            "level",
                            "model",
                            "recipe",
                            "device",
                            "int8_backend",
                            "status",
                            "error",
                            "started_at",
                            "finished_at",
                            "host",
                            "git_commit",
                            "git_dirty",
                            "cpu_name",
                            "cpu_kernels",
                            "gpu_name",
                            "driver_version",
                            "cuda_version",
                            "torch_version",
                            "lpbench_version",
                            "build_type",
                            "tokens_per_step",
                            "layers_run",
                            "layers_published",
                            "data",
                            "memory_estimate_gib",
                            "config_json"});
  for (const store::RunRecord& r : store.runs()) {
    const env::Provenance& p = r.provenance;
    out += Row()
               .integer(r.id)
               .integer(r.sweep_id)
               .text(r.workload)
               .text(r.level)
               .text(r.model)
               .text(r.recipe)
               .text(r.device)
               .maybe(r.int8_backend)
               .text(store::to_string(r.status))
               .maybe(r.error)
               .text(r.started_at)
               .maybe(r.finished_at)
               .text(p.host)
               .text(p.git_commit)
               .flag(p.git_dirty)
               .maybe(p.cpu_name)
               .maybe(p.cpu_kernels)
               .maybe(p.gpu_name)
               .maybe(p.driver_version)
               .maybe(p.cuda_version)
               .text(p.torch_version)
               .text(p.lpbench_version)
               .text(p.build_type)
               .integer(r.tokens_per_step)
               .integer(r.layers_run)
               .integer(r.layers_published)
               .maybe(r.data)
               .number(r.memory_estimate_gib)
               .text(r.config_json)
               .line();
  }
  return out;
}

std::string steps_csv(const store::Store& store) {
  std::string out = header({"run_id", "step", "warmup", "loss", "step_ms", "tokens", "lr",
                            "grad_norm", "peak_mem_gib", "peak_reserved_gib", "sm_clock_mhz"});
  for (const store::RunRecord& r : store.runs()) {
    for (const store::StepRecord& s : store.steps(r.id)) {
      out += Row()
                 .integer(s.run_id)
                 .integer(s.step)
                 .flag(s.warmup)
                 .number(s.loss)
                 .number(s.step_ms)
                 .integer(s.tokens)
                 .number(s.lr)
                 .number(s.grad_norm)
                 .number(s.peak_mem_gib)
                 .number(s.peak_reserved_gib)
                 .number(s.sm_clock_mhz)
                 .line();
    }
  }
  return out;
}

std::string evals_csv(const store::Store& store) {
  std::string out = header({"run_id", "step", "val_loss", "tokens"});
  for (const store::RunRecord& r : store.runs()) {
    for (const store::EvalRecord& e : store.evals(r.id)) {
      out += Row().integer(e.run_id).integer(e.step).number(e.val_loss).integer(e.tokens).line();
    }
  }
  return out;
}

std::string kernels_csv(const store::Store& store) {
  std::string out =
      header({"id",        "sweep_id", "name",   "op",     "model", "part",    "gemm",   "recipe",
              "variant",   "backend",  "m",      "n",      "k",     "status",  "reason", "samples",
              "median_ms", "p10_ms",   "p90_ms", "tflops", "gb_s",  "gpu_name"});
  for (const store::KernelResultRecord& r : store.kernel_results(std::nullopt)) {
    out += Row()
               .integer(r.id)
               .integer(r.sweep_id)
               .text(r.name)
               .text(r.op)
               .maybe(r.model)
               .maybe(r.part)
               .maybe(r.gemm)
               .text(r.recipe)
               .text(r.variant)
               .text(r.backend)
               .integer(r.m)
               .integer(r.n)
               .integer(r.k)
               .text(r.status)
               .maybe(r.reason)
               .integer(r.samples)
               .number(r.median_ms)
               .number(r.p10_ms)
               .number(r.p90_ms)
               .number(r.tflops)
               .number(r.gb_s)
               .maybe(r.gpu_name)
               .line();
  }
  return out;
}

}  // namespace lpbench::reports
