#include "base/env/files.h"

#include <sys/stat.h>
#include <unistd.h>

namespace lpbench::env {

FileInfo file_info(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return {true, S_ISREG(st.st_mode), S_ISDIR(st.st_mode), static_cast<int64_t>(st.st_size)};
}

bool writable(const std::string& path) {
  return access(path.c_str(), W_OK) == 0;
}

std::string parent_directory(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace lpbench::env
