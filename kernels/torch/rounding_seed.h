#pragma once

#include <cstdint>

// The seeds of stochastic rounding (kernels/rounding_noise.h): one per quantization, drawn in
// call order from the run's seed, so that a run replays exactly from its seed and no two
// quantizations share their noise.
namespace lpbench::kernels {

// Restarts the sequence. `stream` separates processes that run the same seed side by side (the
// ranks of a data-parallel run: each rank's gradients get their own noise).
void seed_stochastic_rounding(uint64_t run_seed, uint64_t stream = 0);

// The next quantization's seed.
uint64_t next_rounding_seed();

}  // namespace lpbench::kernels
