#include "kernels/torch/rounding_seed.h"

#include <atomic>

#include "kernels/rounding_noise.h"

namespace lpbench::kernels {

namespace {

std::atomic<uint64_t> g_base{0};
std::atomic<uint64_t> g_count{0};

}  // namespace

void seed_stochastic_rounding(uint64_t run_seed, uint64_t stream) {
  g_base.store(rounding_hash(run_seed, stream));
  g_count.store(0);
}

uint64_t next_rounding_seed() {
  return rounding_hash(g_base.load(), g_count.fetch_add(1));
}

}  // namespace lpbench::kernels
