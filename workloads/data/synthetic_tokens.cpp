#include "workloads/data/synthetic_tokens.h"

#include <fmt/format.h>

#include <random>

namespace lpbench::workloads {

namespace {

constexpr int kSuccessors = 4;

// SplitMix64: decorrelates (seed, step) pairs into independent generator seeds.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// 1/2, 1/4, 1/8, 1/8 from one uniform draw in [0, 8).
int successor_index(uint64_t draw) {
  const uint64_t eighths = draw % 8;
  if (eighths < 4) return 0;
  if (eighths < 6) return 1;
  return eighths == 6 ? 2 : 3;
}

}  // namespace

SyntheticTokens::SyntheticTokens(int64_t vocab_size, uint64_t seed)
    : vocab_size_(vocab_size), seed_(seed), successors_(vocab_size * kSuccessors) {
  std::mt19937_64 rng(mix(seed));
  for (int64_t& next : successors_)
    next = static_cast<int64_t>(rng() % vocab_size);
}

at::Tensor SyntheticTokens::batch(int64_t step, int64_t batch, int64_t seq_len) const {
  return sample(mix(seed_ ^ mix(static_cast<uint64_t>(step) + 1)), batch, seq_len);
}

at::Tensor SyntheticTokens::validation_batch(int64_t index, int64_t batch, int64_t seq_len) const {
  constexpr uint64_t kValidationStream = 0x76616c6964617465ULL;  // "validate"
  return sample(mix(seed_ ^ kValidationStream ^ mix(static_cast<uint64_t>(index) + 1)), batch,
                seq_len);
}

at::Tensor SyntheticTokens::sample(uint64_t stream_seed, int64_t batch, int64_t seq_len) const {
  at::Tensor tokens = at::empty({batch, seq_len + 1}, at::kLong);
  auto out = tokens.accessor<int64_t, 2>();
  std::mt19937_64 rng(stream_seed);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t current = static_cast<int64_t>(rng() % vocab_size_);
    out[b][0] = current;
    for (int64_t t = 1; t <= seq_len; ++t) {
      current = successors_[current * kSuccessors + successor_index(rng())];
      out[b][t] = current;
    }
  }
  return tokens;
}

std::string SyntheticTokens::describe() const {
  return fmt::format("synthetic Markov chain (vocab {}, entropy {:.2f} nats/token, seed {})",
                     vocab_size_, kEntropyRateNats, seed_);
}

}  // namespace lpbench::workloads
