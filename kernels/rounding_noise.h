#pragma once

#include <cstdint>

#include "kernels/host_device.h"

// The random numbers of stochastic rounding, one per element, from a counter-based hash: the
// value for element `index` of a quantization drawn with `seed` depends on nothing else, so the
// CUDA kernels (any thread, any order) and the CPU reference produce the same bits, and a run
// replays exactly from its seed.

namespace lpbench::kernels {

// SplitMix64's finaliser (Steele, Lea and Flood 2014) over seed + (index + 1)·φ·2⁶⁴: every bit of
// the output depends on every bit of the input, and consecutive indices give unrelated values.
LPBENCH_HOST_DEVICE inline uint64_t rounding_hash(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// u in [0, 1) on a grid of 2⁻²⁴ (the top 24 bits of the hash, exact in FP32). Adding u to a
// scaled value |v| ≤ 127 and taking the floor rounds up with probability frac(v), to within the
// FP32 rounding of v + u (below 2⁻¹⁷ of a level).
LPBENCH_HOST_DEVICE inline float rounding_uniform(uint64_t seed, uint64_t index) {
  return static_cast<float>(rounding_hash(seed, index) >> 40) * 0x1p-24f;
}

}  // namespace lpbench::kernels

#undef LPBENCH_HOST_DEVICE
