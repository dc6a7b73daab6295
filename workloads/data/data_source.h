#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "workloads/data/token_file.h"
#include "workloads/data/token_source.h"

namespace lpbench::workloads {

// What --data names: the synthetic chain, a directory written by `lpbench data prepare` (its
// meta.json gives the token file, dtype and tokenizer vocabulary), or a bare token file.
struct DataSpec {
  enum class Kind { synthetic, token_file };
  Kind kind = Kind::synthetic;
  std::string token_path;
  TokenDtype dtype = TokenDtype::uint16;
  std::optional<int64_t> vocab_size;  // the tokenizer's, where known (prepared directories)
  std::string text() const;           // as recorded with a run
};

// Throws std::invalid_argument with a one-line message naming what is wrong.
DataSpec parse_data_spec(const std::string& data, const std::string& token_dtype);

std::unique_ptr<TokenSource> open_token_source(const DataSpec& spec, int64_t vocab_size,
                                               uint64_t seed, int64_t seq_len);

}  // namespace lpbench::workloads
