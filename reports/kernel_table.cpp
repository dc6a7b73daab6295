#include "reports/kernel_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "reports/speedup.h"
#include "reports/text_table.h"

namespace lpbench::reports {

namespace {

using store::KernelResultRecord;

bool timed(const KernelResultRecord& r) {
  return r.status == "ok" && r.median_ms && r.p10_ms && r.p90_ms;
}

stats::Summary summary_of(const KernelResultRecord& r) {
  stats::Summary s;
  s.count = r.samples;
  s.median = *r.median_ms;
  s.p10 = *r.p10_ms;
  s.p90 = *r.p90_ms;
  return s;
}

// The BF16 case of the same model, part, GEMM and shape in the same sweep.
const KernelResultRecord* twin_of(const KernelResultRecord& r,
                                  const std::vector<KernelResultRecord>& all) {
  for (const KernelResultRecord& b : all) {
    if (b.op == "gemm" && b.recipe == "bf16" && b.sweep_id == r.sweep_id && b.model == r.model &&
        b.part == r.part && b.gemm == r.gemm && b.m == r.m && b.n == r.n && b.k == r.k) {
      return &b;
    }
  }
  return nullptr;
}

std::string time_cell(const KernelResultRecord& r) {
  if (!timed(r)) return "—";
  return fmt::format("{:.3f} ({:.3f}–{:.3f})", *r.median_ms, *r.p10_ms, *r.p90_ms);
}

std::string rate_cell(const std::optional<double>& value) {
  return value ? fmt::format("{:.1f}", *value) : "—";
}

std::string speedup_cell(const KernelResultRecord& r, const std::vector<KernelResultRecord>& all) {
  if (r.recipe == "bf16") return timed(r) ? "1.00× (twin)" : "—";
  const KernelResultRecord* twin = twin_of(r, all);
  if (!twin || !timed(*twin) || !timed(r)) return "—";
  return speedup_text(speedup(summary_of(*twin), summary_of(r)));
}

// A quantize case's block shape and whether it also wrote the transpose, from its name
// (".../1x128", ".../tensor+transpose"; kernel_bench/case_table.cpp).
std::pair<std::string, std::string> quantize_scheme(const KernelResultRecord& r) {
  std::string last = r.name.substr(r.name.rfind('/') + 1);
  const std::string suffix = "+transpose";
  const bool both = last.size() > suffix.size() &&
                    last.compare(last.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (both) last.resize(last.size() - suffix.size());
  return {last, both ? "X and Xᵀ" : "X"};
}

// "skipped [1]": the reason is listed once under the table, however many cases share it.
std::string status_cell(const KernelResultRecord& r, std::vector<std::string>& reasons) {
  if (r.status == "ok" || !r.reason) return r.status;
  auto it = std::find(reasons.begin(), reasons.end(), *r.reason);
  if (it == reasons.end()) it = reasons.insert(reasons.end(), *r.reason);
  return fmt::format("{} [{}]", r.status, it - reasons.begin() + 1);
}

}  // namespace

std::optional<KernelTables> kernel_tables(const std::vector<KernelResultRecord>& results) {
  if (results.empty()) return std::nullopt;
  std::vector<std::string> reasons;
  KernelTables t{TextTable({{"case"},
                            {"gemm"},
                            {"m×n×k", TextTable::Align::right},
                            {"recipe"},
                            {"variant"},
                            {"backend"},
                            {"median ms (p10–p90)", TextTable::Align::right},
                            {"TFLOP/s · TOP/s", TextTable::Align::right},
                            {"GB/s", TextTable::Align::right},
                            {"vs bf16 twin", TextTable::Align::right},
                            {"status"}}),
                 TextTable({{"model"},
                            {"rows×cols", TextTable::Align::right},
                            {"recipe"},
                            {"blocks"},
                            {"writes"},
                            {"backend"},
                            {"median ms (p10–p90)", TextTable::Align::right},
                            {"GB/s", TextTable::Align::right},
                            {"status"}}),
                 "Milliseconds per call: median (p10–p90) of the timed iterations, CUDA events on "
                 "the working stream (host clock on a CPU), inputs rotated through buffer sets "
                 "larger than the L2. TOP/s for INT8 products, TFLOP/s for the others. The speedup "
                 "is the bf16 twin's median over the case's: faster or slower only when the "
                 "p10–p90 ranges do not overlap, else same. A quantize case writes X, or X and "
                 "Xᵀ from the same pass (\"+transpose\"), as a training step needs both.",
                 {}};
  bool emulated = false;
  for (const KernelResultRecord& r : results) {
    const bool on_cpu = store::emulated_on_cpu(r.backend);
    emulated = emulated || on_cpu;
    const std::string backend = on_cpu ? r.backend + " †" : r.backend;
    if (r.op == "gemm") {
      t.gemms.add_row({fmt::format("{}/{}", r.model.value_or("—"), r.part.value_or("—")),
                       r.gemm.value_or("—"), fmt::format("{}×{}×{}", r.m, r.n, r.k), r.recipe,
                       r.variant, backend, time_cell(r), rate_cell(r.tflops), rate_cell(r.gb_s),
                       speedup_cell(r, results), status_cell(r, reasons)});
    } else {
      const auto [blocks, writes] = quantize_scheme(r);
      t.quantize.add_row({r.model.value_or("—"), fmt::format("{}×{}", r.m, r.n), r.recipe, blocks,
                          writes, backend, time_cell(r), rate_cell(r.gb_s),
                          status_cell(r, reasons)});
    }
  }
  if (emulated) {
    t.notes.emplace_back(
        "† ran on the CPU (a cpu-… backend): such rows check the suite and its numerics, their "
        "times are not a hardware's speed.");
  }
  for (size_t i = 0; i < reasons.size(); ++i)
    t.notes.push_back(fmt::format("[{}] {}", i + 1, reasons[i]));
  return t;
}

std::string render_kernel_table(const std::vector<KernelResultRecord>& results) {
  const std::optional<KernelTables> t = kernel_tables(results);
  if (!t) return "";
  std::string out;
  if (t->gemms.rows() > 0) out += "\n### Kernel benchmarks: GEMMs\n\n" + t->gemms.markdown();
  if (t->quantize.rows() > 0) {
    out += "\n### Kernel benchmarks: quantize\n\n" + t->quantize.markdown();
  }
  out += "\n" + t->reading + "\n";
  for (const std::string& note : t->notes)
    out += "- " + note + "\n";
  return out;
}

std::string render_kernel_table(const store::Store& store, int64_t sweep_id) {
  return render_kernel_table(store.kernel_results(sweep_id));
}

}  // namespace lpbench::reports
