#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/store/records.h"
#include "base/store/store.h"
#include "reports/text_table.h"

namespace lpbench::reports {

// The kernel suite's results of one sweep (lpbench-kernels / lpbench gemm --db): per GEMM case
// its shape, recipe, variant and backend, the median milliseconds with p10–p90, TFLOP/s (TOP/s
// for INT8), GB/s and the speedup over the BF16 case of the same shape (the twin, measured in
// the same process), with a verdict that claims a difference only beyond the spread; then the
// quantize kernels; then the reason of every case that was skipped or failed. Empty when the
// sweep holds no kernel results.
std::string render_kernel_table(const std::vector<store::KernelResultRecord>& results);
std::string render_kernel_table(const store::Store& store, int64_t sweep_id);

// The same, as parts of a report document (report.md and report.html).
struct KernelTables {
  TextTable gemms;                 // no rows when the sweep timed no GEMM
  TextTable quantize;              // no rows when it timed no quantize kernel
  std::string reading;             // how to read the figures
  std::vector<std::string> notes;  // CPU rows, then each skip or failure reason: "[n] why"
};
std::optional<KernelTables> kernel_tables(const std::vector<store::KernelResultRecord>& results);

}  // namespace lpbench::reports
