#include "reports/sweep_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/stats/stats.h"
#include "reports/throughput.h"

namespace lpbench::reports {

namespace {

constexpr std::string_view kEmulatedMark = "†";

std::string or_dash(const std::optional<double>& value, std::string_view format) {
  if (!value) return "—";
  return fmt::format(fmt::runtime(format), *value);
}

using RunsByName = std::vector<std::pair<std::string, std::vector<int64_t>>>;

void add_run(RunsByName& groups, const std::string& name, int64_t run) {
  auto at =
      std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == name; });
  if (at == groups.end()) at = groups.insert(at, {name, {}});
  at->second.push_back(run);
}

// "name (runs 1, 2); other (run 3)"
std::string runs_text(const RunsByName& groups) {
  std::vector<std::string> parts;
  for (const auto& [name, ids] : groups) {
    parts.push_back(
        fmt::format("{} (run{} {})", name, ids.size() > 1 ? "s" : "", fmt::join(ids, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

// The operator set a run recorded ("fused; attention: cudnn"), or "" for runs from before it did.
std::string operators_of(const store::RunRecord& run) {
  const nlohmann::json config = nlohmann::json::parse(run.config_json, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return "";
  return config.value("operators", std::string());
}

std::string device_cell(const store::RunRecord& run) {
  std::string cell = run.provenance.gpu_name.value_or(run.device);
  if (run.world_size > 1) cell += fmt::format(" × {}", run.world_size);
  if (store::products_emulated(run)) cell += std::string(" ") + std::string(kEmulatedMark);
  return cell;
}

// The workload, and its depth wherever it is not the published one: a pruned model is never to be
// read as the full one.
std::string workload_cell(const store::RunRecord& run) {
  if (run.layers_run && run.layers_published && *run.layers_run != *run.layers_published) {
    return fmt::format("{} ({} of {} layers)", run.workload, *run.layers_run,
                       *run.layers_published);
  }
  return run.workload;
}

// A run whose GPU clock fell during its measured steps, or that shared the machine with other
// work, is marked, not silently averaged in.
std::string status_cell(const RunSummary& s) {
  std::string cell(store::to_string(s.run.status));
  if (s.run.clock_fell.value_or(false)) cell += " ‡";
  if (s.run.contention) cell += " §";
  if (s.steps_with_allocation_retries > 0) cell += " ¶";
  return cell;
}

std::string step_ms_cell(const stats::Summary& summary) {
  if (summary.count == 0) return "—";
  return fmt::format("{:.2f} ({:.2f}–{:.2f})", summary.median, summary.p10, summary.p90);
}

std::string speedup_cell(const RunSummary& s) {
  if (!s.speedup) return "—";
  if (s.run.recipe == "bf16") return "1.00× (baseline)";
  return speedup_text(*s.speedup);
}

std::string loss_cell(const std::optional<double>& loss) {
  if (!loss) return "—";
  if (!std::isfinite(*loss)) return "non-finite";
  return fmt::format("{:.4f}", *loss);
}

std::string loss_gap_cell(const RunSummary& s) {
  if (s.run.recipe == "bf16" || !s.loss_gap_pct) return "—";
  if (!std::isfinite(*s.loss_gap_pct)) return "non-finite";
  return fmt::format("{:+.2f} %", *s.loss_gap_pct);
}

}  // namespace

std::optional<store::RunRecord> scaling_baseline(const std::vector<store::RunRecord>& runs,
                                                 const store::RunRecord& run) {
  if (run.world_size < 1 || run.tokens_per_step % run.world_size != 0) return std::nullopt;
  std::optional<store::RunRecord> newest;
  for (const store::RunRecord& r : runs) {
    const bool alike = r.world_size == 1 && !r.sharding && r.status == store::RunStatus::ok &&
                       r.workload == run.workload && r.recipe == run.recipe &&
                       r.layers_run == run.layers_run &&
                       r.tokens_per_step == run.tokens_per_step / run.world_size &&
                       r.provenance.gpu_name == run.provenance.gpu_name &&
                       (r.device == "cpu") == (run.device == "cpu");
    if (alike && (!newest || r.id > newest->id)) newest = r;
  }
  return newest;
}

SweepReport build_sweep_report(const store::Store& store, const store::SweepRecord& sweep) {
  SweepReport report{sweep, {}};
  std::optional<std::vector<store::RunRecord>> all_runs;
  for (const store::RunRecord& run : store.runs(sweep.id)) {
    report.runs.push_back(summarize_stored_run(store, run));
    for (store::ArtifactRecord& file : store.artifacts(run.id))
      report.files.push_back(std::move(file));
    if (run.world_size > 1 || run.sharding) {
      report.ranks[run.id] = store.ranks(run.id);
      if (!all_runs) all_runs = store.runs();  // read once, where a sweep has ranked runs
      if (const std::optional<store::RunRecord> one = scaling_baseline(*all_runs, run)) {
        report.one_process.emplace(run.id, summarize_run(*one, store.steps(one->id)));
      }
    }
  }
  compare_with_bf16(report.runs);
  return report;
}

SweepTable sweep_table(const SweepReport& report) {
  using Align = TextTable::Align;
  SweepTable out{TextTable({{"run"},
                            {"workload"},
                            {"recipe"},
                            {"device"},
                            {"status"},
                            {"steps", Align::right},
                            {"step_ms median (p10–p90)", Align::right},
                            {"tokens/s", Align::right},
                            {"peak_mem_gib", Align::right},
                            {"TFLOP/s", Align::right},
                            {"MFU", Align::right},
                            {"roofline", Align::right},
                            {"speedup vs bf16", Align::right},
                            {"final loss", Align::right},
                            {"loss gap vs bf16", Align::right}}),
                 {}};
  bool any_emulated = false;
  bool any_cpu = false;
  bool any_clock_fell = false;
  std::vector<std::string> errors;
  std::vector<std::string> no_speedups;
  std::vector<std::string> contended;
  std::vector<std::string> retried;
  std::vector<std::string> throughput_notes;
  // Where each run's quantized products ran on a GPU (the default backend differs by GPU), and
  // the operator set each ran on, in the order first seen: the name, then its runs.
  std::vector<std::pair<std::string, std::vector<int64_t>>> int8_backends;
  std::vector<std::pair<std::string, std::vector<int64_t>>> operator_sets;
  std::vector<int64_t> graph_runs;
  std::vector<std::string> clocks;
  for (const RunSummary& s : report.runs) {
    if (replayed_from_graph(s.run)) graph_runs.push_back(s.run.id);
    if (const std::optional<stats::Summary>& c = s.sm_clock_mhz) {
      clocks.push_back(fmt::format("run {} ({}) {:.0f} ({:.0f}–{:.0f})", s.run.id, s.run.recipe,
                                   c->median, c->p10, c->p90));
    }
    any_emulated = any_emulated || store::products_emulated(s.run);
    if (s.run.int8_backend && !store::products_emulated(s.run)) {
      add_run(int8_backends, *s.run.int8_backend, s.run.id);
    }
    if (const std::string ops = operators_of(s.run); !ops.empty())
      add_run(operator_sets, ops, s.run.id);
    any_cpu = any_cpu || s.run.device == "cpu";
    any_clock_fell = any_clock_fell || s.run.clock_fell.value_or(false);
    const Throughput t = throughput(s);
    if (!t.note.empty() && std::find(throughput_notes.begin(), throughput_notes.end(), t.note) ==
                               throughput_notes.end()) {
      throughput_notes.push_back(t.note);
    }
    out.table.add_row({std::to_string(s.run.id), workload_cell(s.run), s.run.recipe,
                       device_cell(s.run), status_cell(s), std::to_string(s.steps_recorded),
                       step_ms_cell(s.step_ms), or_dash(s.tokens_per_s, "{:.0f}"),
                       or_dash(s.peak_mem_gib, "{:.3f}"), or_dash(t.tflops, "{:.1f}"),
                       or_dash(t.mfu_pct, "{:.1f} %"), or_dash(t.roofline_pct, "{:.1f} %"),
                       speedup_cell(s), loss_cell(s.final_loss), loss_gap_cell(s)});
    if (s.run.error)
      errors.push_back(fmt::format("run {} ({}): {}", s.run.id, s.run.recipe, *s.run.error));
    if (s.no_speedup && s.run.recipe != "bf16") {
      no_speedups.push_back(
          fmt::format("run {} ({}): no speedup, {}", s.run.id, s.run.recipe, *s.no_speedup));
    }
    if (s.run.contention) {
      contended.push_back(
          fmt::format("run {} ({}): {}", s.run.id, s.run.recipe, *s.run.contention));
    }
    if (s.steps_with_allocation_retries > 0) {
      retried.push_back(fmt::format("run {} ({}) in {} of {}", s.run.id, s.run.recipe,
                                    s.steps_with_allocation_retries, s.step_ms.count));
    }
  }
  out.notes.push_back(
      "step_ms: median over the measured steps, warm-up left out; speedup: bf16's median over "
      "the recipe's, same sweep; \"same\" when the two p10–p90 ranges overlap.");
  out.notes.push_back(fmt::format(
      "final loss: mean over the last {:.0f} % of steps; loss gap: (recipe − bf16) / bf16.",
      100 * kFinalLossShare));
  if (any_cpu) {
    out.notes.push_back(
        "CPU runs are timed with the host clock and say nothing about GPU speed; their peak "
        "memory is what torch's CPU allocator held (tensors), not the process's.");
  }
  out.notes.push_back(
      "TFLOP/s: model FLOPs per step (6·N + 12·L·H·Q·T per token; per product for the gemm and "
      "linear levels) over the median step; MFU: that over the GPU's dense BF16 peak, for every "
      "recipe (an INT8 or FP8 step can pass 100 %, since its products run above that peak); "
      "roofline: each product at the peak of its own precision plus an estimate of the "
      "other bytes over bandwidth, over the measured time.");
  for (const std::string& note : throughput_notes)
    out.notes.push_back(note + ".");
  if (!int8_backends.empty()) {
    out.notes.push_back(fmt::format("Quantized GEMMs ran on: {}.", runs_text(int8_backends)));
  }
  if (!operator_sets.empty()) {
    out.notes.push_back(fmt::format(
        "Operators (--fusion; fused: lpbench's norm, RoPE and SwiGLU kernels, BF16 weight copies, "
        "FP32 gradients from the products, fused AdamW and loss): {}.",
        runs_text(operator_sets)));
  }
  if (!graph_runs.empty()) {
    out.notes.push_back(fmt::format(
        "Steps replayed from a CUDA graph (--cuda-graph; run{} {}): the GPU's work without the "
        "host's launch gaps; a replay's allocations are the graph's, which the allocator does not "
        "count a step, so peak_mem_gib is \"—\" (peak reserved is in the steps table).",
        graph_runs.size() > 1 ? "s" : "", fmt::join(graph_runs, ", ")));
  }
  if (!clocks.empty()) {
    out.notes.push_back(fmt::format(
        "SM clock as the measured steps ran (NVML's reading as each step's last kernels ran, "
        "which it renews about every 0.1 s: a shorter step carries the clock of the steps "
        "around it, a longer one its own), MHz, median (p10–p90): {}. Where two runs' clocks "
        "differ beyond their spread, so did the conditions their speedup compares.",
        fmt::join(clocks, "; ")));
  }
  if (any_clock_fell) {
    out.notes.push_back(
        "‡ the GPU's SM clock fell during the run's measured steps (see run_events, "
        "device_samples): its times are flagged, not comparable as they are.");
  }
  for (const std::string& note : no_speedups)
    out.notes.push_back(note + ".");
  if (!contended.empty()) {
    out.notes.push_back(fmt::format(
        "§ measured while other work shared the machine, so its times carry that work's noise "
        "(load_samples): {}.",
        fmt::join(contended, "; ")));
  }
  if (!retried.empty()) {
    out.notes.push_back(fmt::format(
        "¶ the GPU's caching allocator ran short of free memory and released its cache to retry "
        "an allocation during measured steps ({}; step_metrics {}): those steps' times include "
        "the release and the allocations after it. A memory plan with more room (more "
        "--checkpoint-layers, a smaller --micro-batch) measures without it; `lpbench run "
        "--memory-snapshot N` records what the allocator held when it retried.",
        fmt::join(retried, "; "), store::kAllocationRetriesMetric));
  }
  if (!report.files.empty()) {
    std::vector<std::string> files;
    for (const store::ArtifactRecord& f : report.files) {
      files.push_back(fmt::format("run {}{}: {} {}", f.run_id,
                                  f.step ? fmt::format(" step {}", *f.step) : std::string(), f.kind,
                                  f.path));
    }
    out.notes.push_back(
        fmt::format("Files (the steps they describe are left out of the statistics): {}.",
                    fmt::join(files, "; ")));
  }
  if (any_emulated) {
    out.notes.push_back(fmt::format(
        "{} quantized products computed by the CPU reference: the GPU path's numerics (exact for "
        "INT8), emulated; the time is not a hardware figure.",
        kEmulatedMark));
  }
  for (const std::string& error : errors)
    out.notes.push_back(error);
  return out;
}

std::string sweep_heading(const store::SweepRecord& sweep) {
  return fmt::format("Sweep {}{} · {} · {}", sweep.id,
                     sweep.label ? fmt::format(" ({})", *sweep.label) : "", sweep.started_at,
                     sweep.host);
}

namespace {

// Tokens/s on N ranks over N × one process's, the per-GPU batch equal; 100 % is perfect.
std::string efficiency_cell(const SweepReport& report, const RunSummary& s) {
  const auto it = report.one_process.find(s.run.id);
  if (it == report.one_process.end()) return "— (no one-process run alike)";
  const RunSummary& one = it->second;
  if (!s.tokens_per_s || !one.tokens_per_s) return "—";
  const double efficiency =
      *s.tokens_per_s / (static_cast<double>(s.run.world_size) * *one.tokens_per_s);
  return fmt::format("{:.0f} % (run {})", 100.0 * efficiency, one.run.id);
}

}  // namespace

std::optional<TextTable> data_parallel_table(const SweepReport& report) {
  using Align = TextTable::Align;
  TextTable table({{"run"},
                   {"recipe"},
                   {"ranks", Align::right},
                   {"sharding"},
                   {"tokens/s", Align::right},
                   {"tokens/s per rank", Align::right},
                   {"rank step_ms (fastest–slowest)", Align::right},
                   {"peak_mem_gib (largest)", Align::right},
                   {"communication ms/step (share)", Align::right},
                   {"scaling efficiency (one process: run)", Align::right}});
  bool any = false;
  for (const RunSummary& s : report.runs) {
    const auto it = report.ranks.find(s.run.id);
    if (it == report.ranks.end()) continue;
    any = true;
    // Plain doubles with NaN for "none": the optional-based form trips GCC 12's
    // maybe-uninitialized warning.
    double fastest = NAN, slowest = NAN, peak = NAN;
    std::vector<double> comms;
    for (const store::RankRecord& r : it->second) {
      if (r.step_ms) {
        fastest = std::isnan(fastest) ? *r.step_ms : std::min(fastest, *r.step_ms);
        slowest = std::isnan(slowest) ? *r.step_ms : std::max(slowest, *r.step_ms);
      }
      if (r.peak_mem_gib)
        peak = std::isnan(peak) ? *r.peak_mem_gib : std::max(peak, *r.peak_mem_gib);
      if (r.comm_ms) comms.push_back(*r.comm_ms);
    }
    const double comm = comms.empty() ? NAN : stats::summarize(comms).median;
    const double ranks = static_cast<double>(s.run.world_size);
    const auto number = [](double value, const char* format) {
      return std::isnan(value) ? std::string("—") : fmt::format(fmt::runtime(format), value);
    };
    const double tokens = s.tokens_per_s.value_or(NAN);
    table.add_row({std::to_string(s.run.id), s.run.recipe, std::to_string(s.run.world_size),
                   s.run.sharding.value_or("—"), number(tokens, "{:.0f}"),
                   number(tokens / ranks, "{:.0f}"),
                   std::isnan(fastest) ? "—" : fmt::format("{:.2f}–{:.2f}", fastest, slowest),
                   number(peak, "{:.3f}"),
                   !std::isnan(comm) && s.step_ms.count > 0
                       ? fmt::format("{:.2f} ({:.0f} %)", comm, 100.0 * comm / s.step_ms.median)
                       : "— (run with --regions)",
                   efficiency_cell(report, s)});
  }
  if (!any) return std::nullopt;
  return table;
}

std::string render_sweep_markdown(const SweepReport& report) {
  std::string out =
      fmt::format("## {}\n\n`{}`\n\n", sweep_heading(report.sweep), report.sweep.command_line);
  if (report.runs.empty()) return out + "No runs were recorded in this sweep.\n";
  const SweepTable table = sweep_table(report);
  out += table.table.markdown();
  out += "\n";
  for (const std::string& note : table.notes)
    out += "- " + note + "\n";
  if (const std::optional<TextTable> ranks = data_parallel_table(report)) {
    out +=
        "\nData parallel: tokens/s counts every rank's tokens; each rank's step and peak are "
        "its own, gathered by rank 0; communication is the collectives' regions per step; "
        "scaling efficiency is tokens/s over N × a one-process run's alike.\n\n";
    out += ranks->markdown();
  }
  return out;
}

}  // namespace lpbench::reports
