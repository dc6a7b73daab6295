#include <string_view>

#include "harness/cli/commands.h"
#include "harness/kernel_bench/kernel_suite.h"

namespace lpbench::cli {

void add_gemm_command(CLI::App& app) {
  // Listed in `lpbench --help` only: forward_gemm takes `lpbench gemm ...` before CLI11 parses,
  // because Google Benchmark's flags (--benchmark_filter=...) are not CLI11's.
  app.add_subcommand("gemm",
                     "Kernel benchmarks (Google Benchmark; the same as lpbench-kernels): GEMMs "
                     "of each model's linear shapes per recipe, and the quantize kernels; "
                     "see lpbench gemm --help");
}

std::optional<int> forward_gemm(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "gemm") return std::nullopt;
  return kernel_bench::kernel_suite_main(argc - 1, argv + 1, "lpbench gemm");
}

}  // namespace lpbench::cli
