#pragma once

// Division by a divisor fixed at launch as a multiply-high, an add and a shift: the element-wise
// kernels (RoPE, SwiGLU, the q/k norms) split a flat index into its coordinates for every
// 16-byte vector they move, and a 64-bit `/` or `%` by a runtime value is a call of some sixty
// instructions on the GPU, enough to make those kernels wait on arithmetic instead of memory
// (docs/perf-log.md §36).
//
// The method (Granlund and Montgomery, "Division by invariant integers using multiplication",
// 1994): with s = ⌈log2 d⌉ and M = ⌊2^(32+s) / d⌋ + 1, ⌊n / d⌋ = ⌊n·M / 2^(32+s)⌋ for every
// n < 2^32. M has 33 bits; its low 32 are kept as `multiplier`, and the product is
// n + mulhi(n, multiplier), which fits 32 bits for n < 2^31: the launchers refuse index spaces
// of 2^31 and more. Host and device compute the same, so the CPU tests check it.
#include <cstdint>

#include "kernels/host_device.h"

namespace lpbench::cuda {

// The largest index (exclusive) a FastDivmod divides exactly.
constexpr uint32_t kFastDivmodLimit = uint32_t{1} << 31;

struct FastDivmod {
  uint32_t divisor = 1;
  uint32_t multiplier = 1;
  uint32_t shift = 0;

  FastDivmod() = default;
  // `d` from 1 to 2^31 − 1 (the launchers check their divisors before they build one).
  explicit FastDivmod(uint32_t d) : divisor(d) {
    while ((uint64_t{1} << shift) < d)
      ++shift;
    multiplier =
        static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }

  // ⌊n / divisor⌋ for n < kFastDivmodLimit.
  LPBENCH_HOST_DEVICE uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t high = __umulhi(n, multiplier);
#else
    const auto high = static_cast<uint32_t>((uint64_t{n} * multiplier) >> 32);
#endif
    return (high + n) >> shift;
  }

  // n / divisor into `quotient`, the remainder returned.
  LPBENCH_HOST_DEVICE uint32_t divmod(uint32_t n, uint32_t& quotient) const {
    quotient = div(n);
    return n - quotient * divisor;
  }
};

}  // namespace lpbench::cuda
