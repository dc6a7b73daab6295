// lpbench-kernels: the kernel suite on its own (the same program as `lpbench gemm`).
#include <fmt/format.h>

#include <exception>

#include "base/errors.h"
#include "harness/kernel_bench/kernel_suite.h"

int main(int argc, char** argv) {
  try {
    return lpbench::kernel_bench::kernel_suite_main(argc, argv, "lpbench-kernels");
  } catch (const lpbench::InputError& error) {
    fmt::print(stderr, "lpbench-kernels: error: {}\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "lpbench-kernels: internal error: {}\n", error.what());
    return 1;
  }
}
