#pragma once

#include <string>
#include <string_view>

// Checks of the files and folders a command writes, made before it reads or writes anything,
// so that a bad path stops with one line (InputError) and changes nothing.
namespace lpbench::cli {

// A file the command will create or replace: its folder must exist and be writable, and an
// existing file must be a writable regular file.
void check_output_file(std::string_view flag, const std::string& path);

// A folder the command will write files into: it may exist (writable) or be created, whose
// parent must then exist and be writable. Creates nothing.
void check_output_directory(std::string_view flag, const std::string& path);

// Creates the folder checked above where it is missing (one level, like mkdir).
void make_output_directory(const std::string& path);

// Writes `content` to `path` whole; throws std::runtime_error when the write fails.
void write_text_file(const std::string& path, std::string_view content);

}  // namespace lpbench::cli
