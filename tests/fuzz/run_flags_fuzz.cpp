// Fuzzes `lpbench run`'s command line: the input is the arguments after `lpbench run`, one per
// line. Every command line is either refused by CLI11 (lpbench prints its message and exits 2),
// refused by the option checks with a one-line InputError, or accepted with every option in its
// range. Any other exception, a crash or undefined behaviour fails.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.h"
#include "harness/cli/parse_command_line.h"
#include "harness/cli/run_flags.h"
#include "harness/config/run_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"lpbench", "run"};
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  if (!current.empty()) args.push_back(current);
  if (args.size() > 64) return 0;

  CLI::App app{"lpbench"};
  app.require_subcommand(1);
  CLI::App* run = app.add_subcommand("run");
  lpbench::config::RunConfig config;
  std::string label;
  lpbench::cli::add_run_flags(*run, config, label);
  std::vector<char*> argv;
  for (std::string& arg : args)
    argv.push_back(arg.data());
  try {
    lpbench::cli::parse_command_line(app, static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return 0;
  }
  try {
    lpbench::config::check_run_options(config);
  } catch (const lpbench::InputError& error) {
    const std::string_view message = error.what();
    if (message.empty() || message.find('\n') != std::string_view::npos) std::abort();
    return 0;
  }
  // Accepted: the sizes are in range, so their products cannot overflow downstream.
  if (config.steps < 1 || config.micro_batch < 0 || config.seq_len < 0 || config.lr < 0.0 ||
      config.recipes.empty() || config.workloads.empty()) {
    std::abort();
  }
  return 0;
}
