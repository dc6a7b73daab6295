#pragma once

#include <string>

// lpbench-kernels, also `lpbench gemm`: the kernel suite as a Google Benchmark program. Parses
// lpbench's flags and Google Benchmark's, registers one benchmark per case of the case table,
// runs them with Google Benchmark's console output and writes each case's row into the store
// (--db). Throws InputError for bad input; returns the exit code otherwise (1 when a case failed
// validation or raised an error, 0 otherwise: skipped cases do not fail the run).
namespace lpbench::kernel_bench {

// `program` names the program in help and errors ("lpbench-kernels" or "lpbench gemm").
int kernel_suite_main(int argc, char** argv, const std::string& program);

}  // namespace lpbench::kernel_bench
