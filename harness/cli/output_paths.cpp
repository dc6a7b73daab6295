#include "harness/cli/output_paths.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "base/env/files.h"
#include "base/errors.h"

namespace lpbench::cli {

namespace {

void check_parent(std::string_view flag, const std::string& path, std::string_view what) {
  const std::string dir = env::parent_directory(path);
  if (!env::file_info(dir).directory) {
    throw InputError(fmt::format("{} {}: cannot create {} '{}': folder '{}' does not exist", flag,
                                 path, what, path, dir));
  }
  if (!env::writable(dir)) {
    throw InputError(fmt::format("{} {}: cannot create {} '{}': folder '{}' is not writable", flag,
                                 path, what, path, dir));
  }
}

}  // namespace

void check_output_file(std::string_view flag, const std::string& path) {
  if (path.empty()) throw InputError(fmt::format("{} needs a file path", flag));
  const env::FileInfo file = env::file_info(path);
  if (file.exists) {
    if (!file.regular) {
      throw InputError(fmt::format("{} {}: '{}' exists and is not a regular file; give a file path",
                                   flag, path, path));
    }
    if (!env::writable(path)) {
      throw InputError(
          fmt::format("{} {}: cannot write '{}': permission denied", flag, path, path));
    }
    return;
  }
  check_parent(flag, path, "file");
}

void check_output_directory(std::string_view flag, const std::string& given) {
  if (given.empty()) throw InputError(fmt::format("{} needs a folder path", flag));
  // "out/" names the folder "out", whose parent is ".".
  std::string path = given;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  const env::FileInfo dir = env::file_info(path);
  if (dir.exists) {
    if (!dir.directory) {
      throw InputError(fmt::format("{} {}: '{}' exists and is not a folder; give a folder path",
                                   flag, path, path));
    }
    if (!env::writable(path)) {
      throw InputError(
          fmt::format("{} {}: cannot write into folder '{}': permission denied", flag, path, path));
    }
    return;
  }
  check_parent(flag, path, "folder");
}

void make_output_directory(const std::string& path) {
  if (env::file_info(path).directory) return;
  if (mkdir(path.c_str(), 0777) != 0 && errno != EEXIST) {
    throw std::runtime_error(
        fmt::format("cannot create folder '{}': {}", path, std::strerror(errno)));
  }
}

void write_text_file(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path));
}

}  // namespace lpbench::cli
