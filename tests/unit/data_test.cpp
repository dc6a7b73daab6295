// Token files and SentencePiece preparation, round trip and bad input.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

#include "tests/support/temp_dir.h"
#include "workloads/data/corpus.h"
#include "workloads/data/data_source.h"
#include "workloads/data/token_file.h"

namespace lpbench::workloads {
namespace {

using lpbench::testing::TempDir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(TokenFile, RoundTripsBothDtypesAndSplitsTrainFromValidation) {
  TempDir dir;
  std::vector<int64_t> ids(1000);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int64_t>((i * 7919) % 70000);
  for (TokenDtype dtype : {TokenDtype::uint16, TokenDtype::uint32}) {
    std::vector<int64_t> written = ids;
    if (dtype == TokenDtype::uint16) {
      for (int64_t& id : written)
        id %= 65536;
    }
    const std::string path = dir / "tokens.bin";
    write_token_file(path, written, dtype);
    const TokenFile file(path, dtype, 70000, 0, 16, 0.1);
    ASSERT_EQ(file.size(), 1000);
    for (int64_t i = 0; i < 1000; ++i)
      ASSERT_EQ(file.token(i), written[i]);
    // Batches are contiguous slices of the file: training ones from the first 90 %.
    const at::Tensor batch = file.batch(3, 4, 16);
    EXPECT_EQ(batch.sizes(), (std::vector<int64_t>{4, 17}));
    EXPECT_TRUE(torch::equal(file.batch(3, 4, 16), batch));
    const at::Tensor validation = file.validation_batch(0, 4, 16);
    auto find_start = [&](int64_t first, int64_t second) {
      for (int64_t i = 0; i + 1 < 1000; ++i) {
        if (written[i] == first && written[i + 1] == second) return i;
      }
      return int64_t{-1};
    };
    for (int64_t b = 0; b < 4; ++b) {
      EXPECT_LT(find_start(batch[b][0].item<int64_t>(), batch[b][1].item<int64_t>()), 900 - 16);
      EXPECT_GE(find_start(validation[b][0].item<int64_t>(), validation[b][1].item<int64_t>()),
                900);
    }
  }
}

TEST(TokenFile, RefusesFilesThatCannotBeTokenArrays) {
  TempDir dir;
  testing::write_file(dir / "odd.bin", std::string(7, '\1'));
  EXPECT_NE(error_of([&] {
              TokenFile(dir / "odd.bin", TokenDtype::uint16, 512, 0, 4);
            }).find("not a positive multiple of 2"),
            std::string::npos);
  testing::write_file(dir / "empty.bin", "");
  EXPECT_NE(error_of([&] {
              TokenFile(dir / "empty.bin", TokenDtype::uint32, 512, 0, 4);
            }).find("0 bytes"),
            std::string::npos);
  write_token_file(dir / "big.bin", std::vector<int64_t>(400, 600), TokenDtype::uint16);
  EXPECT_NE(error_of([&] {
              TokenFile(dir / "big.bin", TokenDtype::uint16, 512, 0, 4);
            }).find("id 600 at position 0, outside the model's vocabulary of 512"),
            std::string::npos);
  write_token_file(dir / "short.bin", std::vector<int64_t>(20, 1), TokenDtype::uint16);
  EXPECT_NE(error_of([&] {
              TokenFile(dir / "short.bin", TokenDtype::uint16, 512, 0, 64);
            }).find("too few"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              TokenFile(dir / "absent.bin", TokenDtype::uint16, 512, 0, 4);
            }).find("cannot open"),
            std::string::npos);
}

TEST(DataSpec, ParsesTheThreeKinds) {
  TempDir dir;
  EXPECT_EQ(parse_data_spec("synthetic", "uint16").kind, DataSpec::Kind::synthetic);
  write_token_file(dir / "t.bin", {1, 2, 3}, TokenDtype::uint32);
  const DataSpec file = parse_data_spec(dir / "t.bin", "uint32");
  EXPECT_EQ(file.kind, DataSpec::Kind::token_file);
  EXPECT_EQ(file.dtype, TokenDtype::uint32);
  EXPECT_NE(error_of([&] { parse_data_spec(dir / "t.bin", "int8"); }).find("unknown token dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_data_spec(dir / "nothing", "uint16"); }).find("no such file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_data_spec(dir.path(), "uint16"); }).find("without meta.json"),
            std::string::npos);
  testing::write_file(dir / "meta.json", "{\"tokens\": 3}");
  EXPECT_NE(error_of([&] { parse_data_spec(dir.path(), "uint16"); }).find("not a valid lpbench"),
            std::string::npos);
}

TEST(Corpus, SentencePiecePreparationRoundTripsThroughItsTokenFile) {
  TempDir dir;
  std::ofstream text(dir / "text.txt");
  const char* lines[] = {"In the beginning was the word, and the word was with the model.",
                         "The quick brown fox jumps over the lazy dog again and again.",
                         "Low precision training keeps the loss close to the baseline."};
  for (int i = 0; i < 300; ++i)
    text << lines[i % 3] << " " << i << "\n";
  text.close();
  const PreparedCorpus corpus = prepare_corpus(dir / "text.txt", 200, dir / "out");
  EXPECT_EQ(corpus.vocab_size, 200);
  EXPECT_EQ(corpus.dtype, TokenDtype::uint16);
  EXPECT_GT(corpus.tokens, 3000);
  EXPECT_TRUE(testing::exists(dir / "out/tokenizer.model"));
  const DataSpec spec = parse_data_spec(dir / "out", "uint32");  // meta.json's dtype wins
  EXPECT_EQ(spec.dtype, TokenDtype::uint16);
  EXPECT_EQ(spec.vocab_size, 200);
  auto source = open_token_source(spec, 200, 0, 16);
  EXPECT_LT(source->batch(0, 2, 16).max().item<int64_t>(), 200);
  EXPECT_NE(source->describe().find("tokens.bin"), std::string::npos);

  EXPECT_NE(
      error_of([&] { prepare_corpus(dir / "absent.txt", 200, dir / "x"); }).find("cannot read"),
      std::string::npos);
  EXPECT_NE(error_of([&] { prepare_corpus(dir / "text.txt", 3, dir / "x"); }).find("--vocab"),
            std::string::npos);
}

}  // namespace
}  // namespace lpbench::workloads
