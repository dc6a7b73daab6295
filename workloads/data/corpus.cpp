#include "workloads/data/corpus.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace lpbench::workloads {

namespace {

void make_directory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    throw std::invalid_argument(
        fmt::format("cannot create directory '{}': {}", dir, std::strerror(errno)));
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw std::invalid_argument(fmt::format("'{}' exists and is not a directory", dir));
  }
}

}  // namespace

PreparedCorpus prepare_corpus(const std::string& text_path, int64_t vocab_size,
                              const std::string& out_dir) {
  std::ifstream text(text_path);
  if (!text) throw std::invalid_argument(fmt::format("cannot read text file '{}'", text_path));
  if (vocab_size < 64 || vocab_size > (1 << 20)) {
    throw std::invalid_argument(
        fmt::format("--vocab must be between 64 and {}, got {}", 1 << 20, vocab_size));
  }
  make_directory(out_dir);

  const std::string prefix = out_dir + "/tokenizer";
  const std::string args = fmt::format(
      "--input={} --model_prefix={} --vocab_size={} --model_type=bpe --character_coverage=1.0 "
      "--input_sentence_size=2000000 --shuffle_input_sentence=true --num_threads=2 "
      "--minloglevel=2",
      text_path, prefix, vocab_size);
  if (const auto status = sentencepiece::SentencePieceTrainer::Train(args); !status.ok()) {
    throw std::runtime_error(
        fmt::format("training the tokenizer on '{}' failed: {}", text_path, status.ToString()));
  }
  sentencepiece::SentencePieceProcessor processor;
  if (const auto status = processor.Load(prefix + ".model"); !status.ok()) {
    throw std::runtime_error(fmt::format("loading the tokenizer failed: {}", status.ToString()));
  }

  // Line by line, as the tokenizer was trained; an end-of-sequence token keeps lines apart.
  std::vector<int64_t> ids;
  std::string line;
  std::vector<int> pieces;
  while (std::getline(text, line)) {
    if (line.empty()) continue;
    processor.Encode(line, &pieces);
    ids.insert(ids.end(), pieces.begin(), pieces.end());
    ids.push_back(processor.eos_id() >= 0 ? processor.eos_id() : 0);
  }
  PreparedCorpus corpus{
      out_dir, static_cast<int64_t>(ids.size()), processor.GetPieceSize(),
      processor.GetPieceSize() <= 65536 ? TokenDtype::uint16 : TokenDtype::uint32};
  write_token_file(out_dir + "/tokens.bin", ids, corpus.dtype);

  const nlohmann::json meta{{"tokens", "tokens.bin"},
                            {"dtype", std::string(to_string(corpus.dtype))},
                            {"vocab_size", corpus.vocab_size},
                            {"count", corpus.tokens},
                            {"tokenizer", "tokenizer.model"},
                            {"tokenizer_type", "sentencepiece-bpe"},
                            {"source", text_path}};
  std::ofstream(out_dir + "/meta.json") << meta.dump(2) << "\n";
  return corpus;
}

}  // namespace lpbench::workloads
