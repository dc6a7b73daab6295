#include "workloads/data/data_source.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

#include "workloads/data/synthetic_tokens.h"

namespace lpbench::workloads {

namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TokenDtype parse_dtype(const std::string& text, const std::string& where) {
  if (text == "uint16") return TokenDtype::uint16;
  if (text == "uint32") return TokenDtype::uint32;
  throw std::invalid_argument(
      fmt::format("{}: unknown token dtype '{}'; valid: uint16, uint32", where, text));
}

DataSpec read_prepared(const std::string& dir) {
  const std::string meta_path = dir + "/meta.json";
  std::ifstream in(meta_path);
  if (!in) {
    throw std::invalid_argument(fmt::format(
        "--data '{}' is a directory without meta.json; make one with `lpbench data prepare`", dir));
  }
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(in);
    DataSpec spec;
    spec.kind = DataSpec::Kind::token_file;
    spec.token_path = dir + "/" + meta.at("tokens").get<std::string>();
    spec.dtype = parse_dtype(meta.at("dtype").get<std::string>(), meta_path);
    spec.vocab_size = meta.at("vocab_size").get<int64_t>();
    constexpr int64_t kMaxVocab = int64_t{1} << 32;  // ids are at most uint32
    if (*spec.vocab_size < 1 || *spec.vocab_size > kMaxVocab) {
      throw std::invalid_argument(fmt::format(
          "'{}' is not a valid lpbench data description: vocab_size {} is not between 1 and {}",
          meta_path, *spec.vocab_size, kMaxVocab));
    }
    return spec;
  } catch (const nlohmann::json::exception& error) {
    throw std::invalid_argument(
        fmt::format("'{}' is not a valid lpbench data description: {}", meta_path, error.what()));
  }
}

}  // namespace

std::string DataSpec::text() const {
  if (kind == Kind::synthetic) return "synthetic";
  return fmt::format("{} ({})", token_path, to_string(dtype));
}

DataSpec parse_data_spec(const std::string& data, const std::string& token_dtype) {
  if (data == "synthetic") return {};
  if (is_directory(data)) return read_prepared(data);
  struct stat st {};
  if (stat(data.c_str(), &st) != 0) {
    throw std::invalid_argument(fmt::format(
        "--data '{}': no such file or directory; valid: synthetic, a directory made by `lpbench "
        "data prepare`, or a token file",
        data));
  }
  DataSpec spec;
  spec.kind = DataSpec::Kind::token_file;
  spec.token_path = data;
  spec.dtype = parse_dtype(token_dtype, "--token-dtype");
  return spec;
}

std::unique_ptr<TokenSource> open_token_source(const DataSpec& spec, int64_t vocab_size,
                                               uint64_t seed, int64_t seq_len) {
  if (spec.kind == DataSpec::Kind::synthetic) {
    return std::make_unique<SyntheticTokens>(vocab_size, seed);
  }
  return std::make_unique<TokenFile>(spec.token_path, spec.dtype, vocab_size, seed, seq_len);
}

}  // namespace lpbench::workloads
