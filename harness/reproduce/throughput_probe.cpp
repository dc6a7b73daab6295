#include "harness/reproduce/throughput_probe.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "harness/timing/step_timer.h"

namespace lpbench::reproduce {

ProbeResult probe_bf16_matmul(const c10::Device& device) {
  // Large enough to reach the dense rate, small enough to take well under a second.
  const int64_t n = device.is_cpu() ? 1024 : 8192;
  const int repeats = device.is_cpu() ? 3 : 10;
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions().dtype(torch::kBFloat16).device(device);
  const torch::Tensor a = torch::randn({n, n}, options);
  const torch::Tensor b = torch::randn({n, n}, options);
  timing::StepTimer timer(device);
  timer.start();
  torch::mm(a, b);  // warm-up: kernel selection, allocator growth
  timer.stop_ms();
  double best_ms = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    timer.start();
    torch::mm(a, b);
    best_ms = std::min(best_ms, timer.stop_ms());
  }
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  return {flops / (best_ms / 1000.0), n};
}

}  // namespace lpbench::reproduce
