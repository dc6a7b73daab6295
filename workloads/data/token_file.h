#pragma once

#include <cstdint>
#include <string>

#include "workloads/data/token_source.h"

namespace lpbench::workloads {

enum class TokenDtype { uint16, uint32 };

// A flat array of token ids (uint16 or uint32, little-endian, no header: the layout nanoGPT- and
// Megatron-style loaders use), memory-mapped. The last `validation_share` of the file is held
// out for validation; training sequences start at offsets drawn from (seed, step).
class TokenFile final : public TokenSource {
 public:
  // Throws std::invalid_argument, naming the file, for a file that cannot be a token array of
  // this dtype (missing, empty, size not a multiple of the token size, an id >= vocab_size, too
  // few tokens for one sequence of each split).
  TokenFile(const std::string& path, TokenDtype dtype, int64_t vocab_size, uint64_t seed,
            int64_t min_sequence, double validation_share = 0.05);
  ~TokenFile() override;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  at::Tensor batch(int64_t step, int64_t batch, int64_t seq_len) const override;
  at::Tensor validation_batch(int64_t index, int64_t batch, int64_t seq_len) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  std::string describe() const override;

  int64_t size() const { return count_; }
  int64_t token(int64_t index) const;

 private:
  at::Tensor gather(uint64_t stream_seed, int64_t begin, int64_t end, int64_t batch,
                    int64_t seq_len) const;

  std::string path_;
  TokenDtype dtype_;
  int64_t vocab_size_;
  uint64_t seed_;
  const unsigned char* data_ = nullptr;
  size_t bytes_ = 0;
  int64_t count_ = 0;
  int64_t train_end_ = 0;  // tokens [0, train_end_) train, [train_end_, count_) validate
};

// Writes ids as a flat token file of `dtype`; throws std::runtime_error when it cannot.
void write_token_file(const std::string& path, const std::vector<int64_t>& ids, TokenDtype dtype);

std::string_view to_string(TokenDtype dtype);

}  // namespace lpbench::workloads
