#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

// Every CUDA call is checked, with the expression, file and line in the message; launchers
// throw, only main exits.
namespace lpbench::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const char* expr, cudaError_t err, const char* file, int line) {
  throw CudaError(std::string(expr) + " failed: " + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ") at " + file + ":" + std::to_string(line));
}

}  // namespace lpbench::cuda

#define LPBENCH_CUDA_CHECK(expr)                                      \
  do {                                                                \
    const cudaError_t lpbench_err_ = (expr);                          \
    if (lpbench_err_ != cudaSuccess) {                                \
      ::lpbench::cuda::fail(#expr, lpbench_err_, __FILE__, __LINE__); \
    }                                                                 \
  } while (0)

// After a kernel launch: the launch's own error (bad configuration), not the kernel's outcome.
#define LPBENCH_CUDA_CHECK_LAUNCH() LPBENCH_CUDA_CHECK(cudaGetLastError())

// A launcher's precondition on its arguments.
#define LPBENCH_CUDA_REQUIRE(cond, message)                                             \
  do {                                                                                  \
    if (!(cond)) throw std::invalid_argument(std::string(__func__) + ": " + (message)); \
  } while (0)
