#pragma once

#include <c10/core/Device.h>

namespace lpbench::reproduce {

// The device's dense BF16 matrix-product rate, measured now: square BF16 products (2048 on a
// CPU, 8192 on a GPU) timed after a warm-up, the best of a few. It is the basis of `reproduce
// --dry-run`'s time estimate; FLOP/s.
struct ProbeResult {
  double flops_per_s = 0.0;
  int64_t size = 0;  // the products were size × size × size
};
ProbeResult probe_bf16_matmul(const c10::Device& device);

}  // namespace lpbench::reproduce
