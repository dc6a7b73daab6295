#pragma once

#include <string_view>

namespace lpbench::env {

// What was built: stamped at build time by cmake/WriteBuildInfo.cmake.
struct BuildInfo {
  std::string_view version;     // lpbench's own version (CMake project version)
  std::string_view git_commit;  // "unknown" outside a git checkout
  bool git_dirty;               // uncommitted changes in the tree that was built
  std::string_view build_type;
  std::string_view compiler;
};

const BuildInfo& build_info();

}  // namespace lpbench::env
