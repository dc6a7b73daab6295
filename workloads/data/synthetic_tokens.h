#pragma once

#include <vector>

#include "workloads/data/token_source.h"

namespace lpbench::workloads {

// Learnable synthetic tokens: a first-order Markov chain in which every token has four
// successors, drawn with probabilities 1/2, 1/4, 1/8 and 1/8. Its entropy rate is 1.21 nats per
// token whatever the vocabulary, so a model that learns the chain drives the loss far below
// ln(vocab) (6.24 for 512 tokens), while a model that learns nothing stays there.
class SyntheticTokens final : public TokenSource {
 public:
  SyntheticTokens(int64_t vocab_size, uint64_t seed);
  at::Tensor batch(int64_t step, int64_t batch, int64_t seq_len) const override;
  // Drawn from the same chain with another stream of random numbers.
  at::Tensor validation_batch(int64_t index, int64_t batch, int64_t seq_len) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  std::string describe() const override;

  static constexpr double kEntropyRateNats = 1.2130075659799042;  // H(1/2, 1/4, 1/8, 1/8)

 private:
  int64_t vocab_size_;
  uint64_t seed_;
  std::vector<int64_t> successors_;  // [vocab, 4]

  at::Tensor sample(uint64_t stream_seed, int64_t batch, int64_t seq_len) const;
};

}  // namespace lpbench::workloads
