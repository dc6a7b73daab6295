#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace lpbench::dist {

// A new empty file under $TMPDIR (or /tmp), removed with its SQLite companions (-wal, -shm,
// -journal) when this goes: the store of a data-parallel rank other than 0.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& stem) {
    const char* dir = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/{}-XXXXXX", dir != nullptr && *dir ? dir : "/tmp", stem);
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int fd = mkstemp(name.data());
    if (fd < 0) {
      throw std::runtime_error(
          fmt::format("cannot create a scratch file {}: {}", pattern, std::strerror(errno)));
    }
    close(fd);
    path_ = name.data();
  }
  ~ScratchFile() {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      unlink((path_ + suffix).c_str());
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace lpbench::dist
