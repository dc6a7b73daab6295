#include "workloads/data/token_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace lpbench::workloads {

namespace {

size_t token_bytes(TokenDtype dtype) {
  return dtype == TokenDtype::uint16 ? 2 : 4;
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::string_view to_string(TokenDtype dtype) {
  return dtype == TokenDtype::uint16 ? "uint16" : "uint32";
}

TokenFile::TokenFile(const std::string& path, TokenDtype dtype, int64_t vocab_size, uint64_t seed,
                     int64_t min_sequence, double validation_share)
    : path_(path), dtype_(dtype), vocab_size_(vocab_size), seed_(seed) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    throw std::invalid_argument(
        fmt::format("cannot open token file '{}': {}", path, std::strerror(errno)));
  }
  struct stat st {};
  fstat(fd, &st);
  bytes_ = static_cast<size_t>(st.st_size);
  if (bytes_ == 0 || bytes_ % token_bytes(dtype) != 0) {
    close(fd);
    throw std::invalid_argument(fmt::format(
        "token file '{}' has {} bytes, not a positive multiple of {} ({} tokens); check "
        "--token-dtype",
        path, bytes_, token_bytes(dtype), to_string(dtype)));
  }
  void* map = mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    throw std::invalid_argument(fmt::format("cannot map token file '{}'", path));
  }
  data_ = static_cast<const unsigned char*>(map);
  count_ = static_cast<int64_t>(bytes_ / token_bytes(dtype));
  // One pass over the file: an id outside the vocabulary would index past the embedding.
  for (int64_t i = 0; i < count_; ++i) {
    const int64_t id = token(i);
    if (id >= vocab_size) {
      munmap(map, bytes_);
      data_ = nullptr;
      throw std::invalid_argument(fmt::format(
          "token file '{}' holds id {} at position {}, outside the model's vocabulary of {}", path,
          id, i, vocab_size));
    }
  }
  train_end_ = count_ - static_cast<int64_t>(validation_share * static_cast<double>(count_));
  if (train_end_ < min_sequence + 1 || count_ - train_end_ < min_sequence + 1) {
    munmap(map, bytes_);
    data_ = nullptr;
    throw std::invalid_argument(fmt::format(
        "token file '{}' has {} tokens, too few for sequences of {} in both its training and "
        "validation parts; use a larger file or a shorter --seq-len",
        path, count_, min_sequence));
  }
}

TokenFile::~TokenFile() {
  if (data_ != nullptr) munmap(const_cast<unsigned char*>(data_), bytes_);
}

int64_t TokenFile::token(int64_t index) const {
  if (dtype_ == TokenDtype::uint16) {
    uint16_t v;
    std::memcpy(&v, data_ + 2 * index, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, data_ + 4 * index, 4);
  return v;
}

at::Tensor TokenFile::gather(uint64_t stream_seed, int64_t begin, int64_t end, int64_t batch,
                             int64_t seq_len) const {
  at::Tensor tokens = at::empty({batch, seq_len + 1}, at::kLong);
  auto out = tokens.accessor<int64_t, 2>();
  std::mt19937_64 rng(stream_seed);
  const auto starts = static_cast<uint64_t>(end - begin - seq_len);  // >= 1 by construction
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = begin + static_cast<int64_t>(rng() % starts);
    for (int64_t t = 0; t <= seq_len; ++t)
      out[b][t] = token(start + t);
  }
  return tokens;
}

at::Tensor TokenFile::batch(int64_t step, int64_t batch, int64_t seq_len) const {
  return gather(mix(seed_ ^ mix(static_cast<uint64_t>(step) + 1)), 0, train_end_, batch, seq_len);
}

at::Tensor TokenFile::validation_batch(int64_t index, int64_t batch, int64_t seq_len) const {
  // Independent of the run's seed: every run is validated on the same sequences.
  return gather(mix(static_cast<uint64_t>(index) + 0x76616c6964617465ULL), train_end_, count_,
                batch, seq_len);
}

std::string TokenFile::describe() const {
  return fmt::format("token file {} ({} {} tokens, {} for validation, vocab {})", path_, count_,
                     to_string(dtype_), count_ - train_end_, vocab_size_);
}

void write_token_file(const std::string& path, const std::vector<int64_t>& ids, TokenDtype dtype) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(fmt::format("cannot write token file '{}'", path));
  for (int64_t id : ids) {
    if (dtype == TokenDtype::uint16) {
      const auto v = static_cast<uint16_t>(id);
      out.write(reinterpret_cast<const char*>(&v), 2);
    } else {
      const auto v = static_cast<uint32_t>(id);
      out.write(reinterpret_cast<const char*>(&v), 4);
    }
  }
  if (!out) throw std::runtime_error(fmt::format("writing token file '{}' failed", path));
}

}  // namespace lpbench::workloads
