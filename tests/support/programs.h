#pragma once

#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace lpbench::testing {

// The first of `names` found as an executable on PATH.
inline std::optional<std::string> find_on_path(const std::vector<std::string>& names) {
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "";
  for (const std::string& name : names) {
    size_t start = 0;
    while (start <= dirs.size()) {
      const size_t colon = std::min(dirs.find(':', start), dirs.size());
      const std::string candidate = dirs.substr(start, colon - start) + "/" + name;
      if (colon > start && access(candidate.c_str(), X_OK) == 0) return candidate;
      start = colon + 1;
    }
  }
  return std::nullopt;
}

// Sets an environment variable for the scope (children spawned meanwhile inherit it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace lpbench::testing
