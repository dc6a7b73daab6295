#pragma once

#include <cstdint>
#include <string>

#include "workloads/data/token_file.h"

namespace lpbench::workloads {

struct PreparedCorpus {
  std::string dir;
  int64_t tokens = 0;
  int64_t vocab_size = 0;
  TokenDtype dtype = TokenDtype::uint16;
};

// Trains a SentencePiece tokenizer (BPE) of `vocab_size` pieces on a text file, encodes the file
// with it, and writes into `out_dir`: tokenizer.model, tokens.bin (uint16 when the vocabulary
// fits, else uint32) and meta.json, which `--data out_dir` reads. Throws std::invalid_argument
// for bad input and std::runtime_error when the tokenizer cannot be trained.
PreparedCorpus prepare_corpus(const std::string& text_path, int64_t vocab_size,
                              const std::string& out_dir);

}  // namespace lpbench::workloads
