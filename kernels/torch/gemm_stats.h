#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "kernels/recipe.h"

// Counts the quantized GEMMs report as they run (the fallback method's outlier blocks), per
// module and GEMM, until a workload collects them after a step. Process-wide and locked:
// backward runs on autograd's own threads.
namespace lpbench::kernels {

struct BlockCount {
  int64_t blocks = 0;    // left-operand blocks seen
  int64_t fallback = 0;  // of which fell back to the residual product
};

void record_fallback(std::string_view module, GemmKind kind, int64_t fallback, int64_t blocks);

// "<module>.<gemm>" → counts since the last call; resets them.
std::map<std::string, BlockCount> take_fallback_counts();

}  // namespace lpbench::kernels
