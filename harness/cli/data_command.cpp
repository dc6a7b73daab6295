#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "base/errors.h"
#include "harness/cli/commands.h"
#include "workloads/data/corpus.h"

namespace lpbench::cli {

namespace {

struct PrepareOptions {
  std::string text;
  int64_t vocab = 8192;
  std::string out;
};

int execute_prepare(const PrepareOptions& options) {
  workloads::PreparedCorpus corpus;
  try {
    corpus = workloads::prepare_corpus(options.text, options.vocab, options.out);
  } catch (const std::invalid_argument& error) {
    throw InputError(error.what());
  }
  fmt::print("Wrote {} {} tokens (vocabulary {}) to {}; train on them with --data {}\n",
             corpus.tokens, workloads::to_string(corpus.dtype), corpus.vocab_size, corpus.dir,
             corpus.dir);
  return 0;
}

}  // namespace

void add_data_command(CLI::App& app, Action& action) {
  CLI::App* data = app.add_subcommand("data", "Prepare training data");
  data->require_subcommand(1);
  auto options = std::make_shared<PrepareOptions>();
  CLI::App* prepare = data->add_subcommand(
      "prepare", "Train a SentencePiece tokenizer on a text file and write its token file");
  prepare->add_option("--text", options->text, "UTF-8 text to tokenize")->required();
  prepare->add_option("--vocab", options->vocab, "Tokenizer vocabulary size")
      ->capture_default_str();
  prepare->add_option("--out", options->out, "Directory to write (created if missing)")->required();
  prepare->callback(
      [&action, options] { action = [options] { return execute_prepare(*options); }; });
}

}  // namespace lpbench::cli
