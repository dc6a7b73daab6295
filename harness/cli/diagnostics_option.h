#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>

// `--diagnostics[=K]` of `run` and `converge`: quantization diagnostics every K steps.
namespace lpbench::cli {

constexpr int64_t kDefaultDiagnosticsEvery = 50;

// Binds the flag as text, so that a bad K gets lpbench's own one-line message (see below).
class DiagnosticsOption {
 public:
  void add_to(CLI::App& command);
  // 0 when the flag was not given, else K; throws InputError for a K that is not a positive
  // integer.
  int64_t every() const;

 private:
  std::shared_ptr<std::string> text_ = std::make_shared<std::string>();
  CLI::Option* option_ = nullptr;
};

}  // namespace lpbench::cli
