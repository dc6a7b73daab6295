#pragma once

#include <cstdint>
#include <string>

// File queries on POSIX calls. Deliberately not std::filesystem: the torch wheel's libtorch.so
// exports its own copy of std::filesystem, and calls that bind to it crashed (remove_all jumped
// to address 0 on both the CPU and the GPU machine). lpbench and its tests use none of it.
namespace lpbench::env {

struct FileInfo {
  bool exists = false;
  bool regular = false;
  bool directory = false;
  int64_t size = 0;
};

FileInfo file_info(const std::string& path);
bool writable(const std::string& path);
// The directory part of a path: "." for a bare file name, "/" for a file at the root.
std::string parent_directory(const std::string& path);

}  // namespace lpbench::env
