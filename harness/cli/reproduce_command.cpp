#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <memory>

#include "base/env/files.h"
#include "base/errors.h"
#include "base/store/store.h"
#include "harness/cli/commands.h"
#include "harness/dist/child_process.h"
#include "harness/reproduce/plan.h"
#include "harness/reproduce/throughput_probe.h"
#include "harness/runner/stop_signal.h"
#include "harness/runner/sweep_runner.h"
#include "reports/published_tables.h"
#include "reports/run_summary.h"
#include "reports/speedup.h"
#include "reports/sweep_report.h"
#include "reports/text_table.h"

namespace lpbench::cli {

namespace {

// ", checkpointed", ", 20 of 32 layers checkpointed", or nothing.
std::string checkpointing_text(const workloads::TrainingOptions& tr, int64_t layers) {
  const int64_t recomputed = workloads::recomputed_layers(tr, layers);
  if (recomputed == 0) return "";
  if (recomputed == layers) return ", checkpointed";
  return fmt::format(", {} of {} layers checkpointed", recomputed, layers);
}

struct ReproduceOptions {
  std::string table;
  bool list = false;
  bool dry_run = false;
  std::string tables_file;  // empty: the built-in tables
  reproduce::PlanOptions plan;
};

// The estimate's assumptions, printed with it.
constexpr double kStepEfficiency = 0.40;  // a whole training step against the bare BF16 matmul
constexpr double kCpuInt8Slowdown = 2.5;  // quantized products emulated on the CPU, against BF16

std::vector<reports::PublishedTable> load_tables(const ReproduceOptions& options) {
  if (options.tables_file.empty()) return reports::published_tables();
  const env::FileInfo file = env::file_info(options.tables_file);
  if (!file.regular) {
    throw InputError(
        fmt::format("--tables {}: no such file; give a JSON file of tables in the "
                    "format of reports/tables/published.json",
                    options.tables_file));
  }
  std::ifstream in(options.tables_file, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return reports::parse_published_tables(text, options.tables_file);
}

const reports::PublishedTable& find_table(const std::vector<reports::PublishedTable>& tables,
                                          const std::string& id) {
  std::string ids;
  for (const reports::PublishedTable& t : tables) {
    if (t.id == id) return t;
    ids += (ids.empty() ? "" : ", ") + t.id;
  }
  if (id.empty()) {
    throw InputError(
        fmt::format("name a table to reproduce ({}); `lpbench reproduce --list` "
                    "shows them",
                    ids));
  }
  throw InputError(
      fmt::format("unknown table '{}'; valid tables: {} (see lpbench reproduce "
                  "--list)",
                  id, ids));
}

std::string conditions_text(const reports::PublishedTable& table) {
  std::string out;
  for (const auto& [key, value] : table.conditions)
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", key, value.value_or("not stated"));
  return out;
}

int print_list(const std::vector<reports::PublishedTable>& tables) {
  reports::TextTable list({{"table"},
                           {"source"},
                           {"figure"},
                           {"rows", reports::TextTable::Align::right},
                           {"lpbench reproduces"}});
  for (const reports::PublishedTable& t : tables) {
    list.add_row({t.id, t.source, t.figure, std::to_string(t.rows.size()), t.reproduction});
  }
  fmt::print("{}\n", list.markdown());
  fmt::print(
      "end-to-end: the same comparison, run here; partial: the same schemes under other "
      "conditions; none: not an lpbench measurement (`lpbench reproduce <table> --dry-run` "
      "says why).\n");
  return 0;
}

void print_header(const reports::PublishedTable& t) {
  fmt::print("Table {}: {}\nSource: {}\nFigure: {} (lpbench reproduces: {})\n", t.id, t.title,
             t.source, t.figure, t.reproduction);
  if (!t.conditions.empty()) fmt::print("Published conditions: {}\n", conditions_text(t));
  fmt::print("\n");
}

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds)) return "unknown";
  if (seconds < 60) return fmt::format("{:.0f} s", std::max(1.0, seconds));
  if (seconds < 3600)
    return fmt::format("{:.0f} min {:.0f} s", std::floor(seconds / 60), std::fmod(seconds, 60));
  return fmt::format("{:.1f} h", seconds / 3600);
}

// "2 ranks (zero3)" for a row that runs data parallel; "one device" for one process.
std::string ranks_text(const reproduce::PlannedRow& r) {
  if (r.ranks <= 1) return "one device";
  return fmt::format("{} ranks ({})", r.ranks,
                     workloads::to_string(r.run.workloads.front().training.sharding));
}

// Quantized products on the CPU run on the reference: an emulation, slower than BF16 there.
bool quantized_on_cpu(const reproduce::PlannedRow& r) {
  return r.run.device.is_cpu() &&
         std::any_of(r.run.recipes.begin(), r.run.recipes.end(),
                     [](const kernels::Recipe& recipe) { return recipe.gemms.any_quantized(); });
}

int dry_run(const reproduce::Plan& plan, const ReproduceOptions& options) {
  const reports::PublishedTable& t = *plan.table;
  print_header(t);
  const auto first =
      std::find_if(plan.rows.begin(), plan.rows.end(),
                   [](const reproduce::PlannedRow& r) { return r.unavailable.empty(); });
  std::optional<reproduce::ProbeResult> probe;
  if (first != plan.rows.end()) probe = reproduce::probe_bf16_matmul(first->run.device);
  using Align = reports::TextTable::Align;
  reports::TextTable table({{"row"},
                            {"published", Align::right},
                            {"workload"},
                            {"recipes"},
                            {"depth (layers)", Align::right},
                            {"micro-batch × seq len", Align::right},
                            {"GFLOP/step", Align::right},
                            {"estimate, or why it cannot run"}});
  double total_s = 0.0;
  for (const reproduce::PlannedRow& r : plan.rows) {
    if (!r.unavailable.empty()) {
      table.add_row(
          {r.row->label, r.row->published_text, r.row->workload.value_or("—"),
           r.row->recipe ? fmt::format("{}, {}", *t.baseline_recipe, *r.row->recipe) : "—", "—",
           "—", "—", r.unavailable});
      continue;
    }
    const workloads::TrainingOptions& tr = r.run.workloads.front().training;
    const double rate = probe->flops_per_s * kStepEfficiency;
    const double bf16_s = r.flops_per_step * static_cast<double>(tr.total_steps) / rate;
    const double seconds = bf16_s * (1.0 + (quantized_on_cpu(r) ? kCpuInt8Slowdown : 1.0));
    total_s += seconds;
    table.add_row(
        {r.row->label, r.row->published_text, *r.row->workload,
         fmt::format("{}, {}", *t.baseline_recipe, *r.row->recipe),
         fmt::format("{} of {}{}{}", r.layers_run, *r.layers_published,
                     checkpointing_text(tr, r.layers_run), r.ranks > 1 ? ", " + ranks_text(r) : ""),
         fmt::format("{} × {}", tr.micro_batch, tr.seq_len),
         fmt::format("{:.1f}", r.flops_per_step / 1e9), duration_text(seconds)});
  }
  if (plan.runnable() == 0) {
    fmt::print("{}\nNothing would run: {}.\n", table.markdown(),
               t.reproduction == "none" ? "this table is not an lpbench measurement (see the note)"
                                        : "no row of this table can run in this build");
  } else {
    fmt::print(
        "Would run {} of {} rows on {}, {} steps per recipe ({} of warm-up), recorded "
        "into {} as sweeps labelled {}:\n\n{}\n",
        plan.runnable(), plan.rows.size(), first->run.device.str(), options.plan.steps,
        first->run.timing_warmup_steps, options.plan.db, reproduce::sweep_label(t),
        table.markdown());
    fmt::print(
        "Estimated time: {} in all. Basis: model FLOPs per token (6·N_matmul + 12·L·H·Q·T, "
        "MEASURE.md) × tokens per step × steps, for bf16 and for the recipe, over this device's "
        "BF16 matmul rate measured just now ({:.1f} GFLOP/s, {}³ products) × an assumed {:.0f} % "
        "for a whole training step; the recipe assumed no faster than bf16{}. Model building "
        "and whether the depth fits in memory are not counted.\n",
        duration_text(total_s), probe->flops_per_s / 1e9, probe->size, 100 * kStepEfficiency,
        std::any_of(plan.rows.begin(), plan.rows.end(),
                    [](const auto& r) { return r.unavailable.empty() && quantized_on_cpu(r); })
            ? fmt::format(", and quantized products emulated on the CPU assumed {:.1f}× the bf16 "
                          "time (the README's CPU demo measured 0.41× the speed)",
                          kCpuInt8Slowdown)
            : "");
  }
  fmt::print("\nNote: {}\n", t.note);
  return 0;
}

// The measured figure of a row from its sweep, with the range the p10–p90 spreads allow, by the
// one speedup rule of reports/speedup.h.
struct Measured {
  std::optional<double> value, low, high;
  std::string verdict = "—";
  std::string why;  // when there is no value
  std::string device;
  // Runs whose measured steps include the caching allocator releasing its cache (¶ in the
  // report), e.g. "int8-tensor in 9 of 9 steps".
  std::vector<std::string> allocator_retries;
};

Measured measure(const store::Store& store, int64_t sweep_id, const reproduce::PlannedRow& r,
                 const std::string& baseline) {
  const reports::SweepReport report = reports::build_sweep_report(store, *store.sweep(sweep_id));
  const reports::RunSummary* b = nullptr;
  const reports::RunSummary* c = nullptr;
  for (const reports::RunSummary& s : report.runs) {
    if (s.run.recipe == baseline) b = &s;
    if (s.run.recipe == *r.row->recipe) c = &s;
  }
  Measured m;
  if (!b || !c) {
    m.why = "no runs recorded";
    return m;
  }
  m.device = c->run.provenance.gpu_name.value_or(c->run.device == "cpu" ? "CPU" : c->run.device);
  for (const reports::RunSummary* s : {b, c}) {
    if (s->steps_with_allocation_retries > 0) {
      m.allocator_retries.push_back(fmt::format("{} in {} of {} steps", s->run.recipe,
                                                s->steps_with_allocation_retries,
                                                s->step_ms.count));
    }
  }
  if (store::products_emulated(c->run)) m.device += " (quantized products emulated)";
  for (const reports::RunSummary* s : {b, c}) {
    if (const auto refusal = reports::speedup_refusal(s->run, s->step_ms)) {
      m.why = *refusal;
      return m;
    }
  }
  if (r.row->metric == "memory_reduction") {
    if (!b->peak_mem_gib || !c->peak_mem_gib) {
      m.why = "peak memory not recorded";
      return m;
    }
    m.value = m.low = m.high = *b->peak_mem_gib / *c->peak_mem_gib;
    return m;
  }
  // speedup and throughput ratio: the same figure where both steps hold the same tokens.
  const double tokens =
      static_cast<double>(c->run.tokens_per_step) / static_cast<double>(b->run.tokens_per_step);
  const reports::Speedup s = reports::speedup(b->step_ms, c->step_ms, tokens);
  m.value = s.ratio;
  m.low = s.low;
  m.high = s.high;
  m.verdict = std::string(reports::to_string(s.verdict));
  return m;
}

std::string differences(const reports::PublishedTable& t, const reproduce::PlannedRow& r,
                        const Measured& m) {
  std::vector<std::string> out;
  out.push_back(fmt::format("device {} (published: {})", m.device,
                            t.condition("hardware").value_or("not stated")));
  if (r.layers_published && r.layers_run != *r.layers_published) {
    out.push_back(fmt::format("depth {} of {} layers", r.layers_run, *r.layers_published));
  }
  out.push_back(fmt::format("seq len {} (published: {})", r.run.workloads.front().training.seq_len,
                            t.condition("seq_len").value_or("not stated")));
  if (auto framework = t.condition("framework")) {
    out.push_back(fmt::format("lpbench's loop on {} (published: {})", ranks_text(r), *framework));
  }
  if (!m.allocator_retries.empty()) {
    out.push_back(fmt::format(
        "¶ the allocator released its cache to retry allocations ({}): those step times include it",
        fmt::join(m.allocator_retries, ", ")));
  }
  std::string text;
  for (const std::string& s : out)
    text += (text.empty() ? "" : "; ") + s;
  return text;
}

// The newest sweep labelled `label`, if any.
std::optional<int64_t> last_sweep(const store::Store& store, const std::string& label) {
  std::optional<int64_t> last;
  for (const store::SweepRecord& s : store.sweeps()) {
    if (s.label && *s.label == label && (!last || s.id > *last)) last = s.id;
  }
  return last;
}

int reproduce_table(const reproduce::Plan& plan, const ReproduceOptions& options,
                    const std::string& command_line) {
  const reports::PublishedTable& t = *plan.table;
  if (t.reproduction == "none") {
    throw InputError(fmt::format(
        "table '{}' is not an lpbench measurement, so nothing runs; `lpbench reproduce {} "
        "--dry-run` shows its figures and what lpbench can and cannot reproduce",
        t.id, t.id));
  }
  if (plan.runnable() == 0) {
    throw InputError(fmt::format(
        "no row of table '{}' can run in this build ({}); `lpbench reproduce {} --dry-run` "
        "lists them",
        t.id, plan.rows.empty() ? "it has no rows" : plan.rows.front().unavailable, t.id));
  }
  print_header(t);
  store::Store store = store::Store::open(options.plan.db, store::Store::Mode::write);
  using Align = reports::TextTable::Align;
  reports::TextTable table({{"row"},
                            {"published", Align::right},
                            {"measured (range)", Align::right},
                            {"verdict"},
                            {"measured / published", Align::right},
                            {"sweep", Align::right},
                            {"conditions that differ"}});
  bool all_ok = true;
  for (const reproduce::PlannedRow& r : plan.rows) {
    if (!r.unavailable.empty()) {
      table.add_row({r.row->label, r.row->published_text, "—", "—", "—", "—", r.unavailable});
      continue;
    }
    if (runner::StopSignal::requested()) {
      table.add_row({r.row->label, r.row->published_text, "—", "—", "—", "—",
                     "not run: stopped by a signal"});
      continue;
    }
    fmt::print(stderr, "Reproducing {} · {}: {} against {}\n", t.id, r.row->label, *r.row->recipe,
               *t.baseline_recipe);
    int64_t sweep_id = 0;
    if (r.ranks > 1) {
      // The ranks are processes of their own: `lpbench run --nproc-per-node` starts them, and
      // rank 0 records the sweep under the table's label.
      const std::optional<int64_t> before = last_sweep(store, reproduce::sweep_label(t));
      std::vector<std::string> args{"lpbench", "run"};
      args.insert(args.end(), r.run_args.begin(), r.run_args.end());
      const int code = dist::run_self(args);
      all_ok = all_ok && code == 0;
      const std::optional<int64_t> after = last_sweep(store, reproduce::sweep_label(t));
      if (!after || after == before) {
        table.add_row({r.row->label, r.row->published_text, "—", "—", "—", "—",
                       fmt::format("not run: `lpbench run` over {} ranks exited {} before "
                                   "recording a sweep",
                                   r.ranks, code)});
        continue;
      }
      sweep_id = *after;
    } else {
      const runner::SweepOutcome outcome =
          runner::run_sweep(r.run, store, command_line, reproduce::sweep_label(t));
      all_ok = all_ok && outcome.all_ok();
      sweep_id = outcome.sweep_id;
    }
    const Measured m = measure(store, sweep_id, r, *t.baseline_recipe);
    const bool have = m.value.has_value();
    table.add_row({r.row->label, r.row->published_text,
                   have ? fmt::format("{:.2f}x ({:.2f}–{:.2f})", *m.value, *m.low, *m.high) : m.why,
                   m.verdict,
                   have ? fmt::format("{:.2f} ({:.2f}–{:.2f})", *m.value / r.row->published,
                                      *m.low / r.row->published, *m.high / r.row->published)
                        : "—",
                   std::to_string(sweep_id), differences(t, r, m)});
  }
  fmt::print("{}\n", table.markdown());
  fmt::print(
      "measured: {} median over the measured steps; range: from its p10 over the recipe's p90 "
      "to its p90 over the recipe's p10; verdict: \"same\" when that range holds 1 (no claimed "
      "difference). See `lpbench report --db {}` for the sweeps.\n\nNote: {}\n",
      *t.baseline_recipe, options.plan.db, t.note);
  return all_ok ? 0 : 1;
}

int execute(const ReproduceOptions& options, const std::string& command_line) {
  const std::vector<reports::PublishedTable> tables = load_tables(options);
  if (options.list) return print_list(tables);
  const reports::PublishedTable& table = find_table(tables, options.table);
  const reproduce::Plan plan = reproduce::make_plan(table, options.plan);
  if (options.dry_run) return dry_run(plan, options);
  return reproduce_table(plan, options, command_line);
}

}  // namespace

void add_reproduce_command(CLI::App& app, Action& action, const std::string& command_line) {
  auto options = std::make_shared<ReproduceOptions>();
  CLI::App* cmd = app.add_subcommand(
      "reproduce",
      "Run a published table's comparisons here and set the figures side by side (--list: the "
      "tables)");
  cmd->add_option("table", options->table, "The table's id, e.g. int8-te");
  cmd->add_flag("--list", options->list, "List the published tables");
  cmd->add_flag("--dry-run", options->dry_run,
                "Show what would run and an estimate of how long, and run nothing");
  cmd->add_option("--db", options->plan.db, "SQLite database to record into")
      ->capture_default_str();
  cmd->add_option("--steps", options->plan.steps, "Optimizer steps per recipe")
      ->capture_default_str();
  cmd->add_option("--layers", options->plan.layers,
                  "Decoder layers run, at most each model's own (the default keeps the largest "
                  "seed model to a few billion parameters)")
      ->capture_default_str();
  cmd->add_flag("--full-depth", options->plan.full_depth,
                "Each row at its published depth (overrides --layers): the memory plan turns on "
                "activation checkpointing where that makes a row fit this device, and lists the "
                "rows no single device of this size holds");
  cmd->add_option("--seq-len", options->plan.seq_len,
                  "Tokens per sequence (default, or 0: each model's)");
  cmd->add_option("--micro-batch", options->plan.micro_batch,
                  "Sequences per step (default, or 0: each model's)");
  cmd->add_option("--device", options->plan.device, "auto, cpu, cuda or cuda:<index>")
      ->capture_default_str();
  cmd->add_option("--nproc-per-node", options->plan.nproc_per_node,
                  "A row one device cannot hold runs data parallel over this many ranks of this "
                  "machine (one a GPU), sharded as the memory plan chooses; 1: such rows are "
                  "listed, not run")
      ->capture_default_str();
  cmd->add_option("--memory-budget-gib", options->plan.memory_budget_gib,
                  "Plan each row for this much device memory (0: the device's)")
      ->capture_default_str();
  cmd->add_option("--tables", options->tables_file,
                  "Read the tables from this JSON file instead of the built-in ones");
  cmd->callback([&action, options, command_line] {
    action = [options, command_line] { return execute(*options, command_line); };
  });
}

}  // namespace lpbench::cli
