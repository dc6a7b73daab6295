#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace lpbench::workloads {

// Where training tokens come from. A batch depends only on the source and the step index, never
// on what was drawn before, so every recipe of a sweep sees the same data in the same order even
// when their steps are interleaved. Validation batches come from data training never sees.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // Tokens [batch, seq_len + 1] (int64, CPU): inputs are [:, :-1], targets [:, 1:].
  virtual at::Tensor batch(int64_t step, int64_t batch, int64_t seq_len) const = 0;
  // The index-th validation batch, the same for every run of the same source.
  virtual at::Tensor validation_batch(int64_t index, int64_t batch, int64_t seq_len) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual std::string describe() const = 0;
};

}  // namespace lpbench::workloads
