#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>

// Each subcommand lives in its own file: it binds its flags onto a typed struct and, once the
// command line is parsed, runs. Library code throws InputError for bad input; main exits.
namespace lpbench::cli {

// What runs once parsing succeeded; returns the process's exit code.
using Action = std::function<int()>;

// `command_line` is the whole invocation, as the store records it.
void add_run_command(CLI::App& app, Action& action, const std::string& command_line);
void add_report_command(CLI::App& app, Action& action);
void add_list_command(CLI::App& app, Action& action);
void add_data_command(CLI::App& app, Action& action);
void add_compare_command(CLI::App& app, Action& action);
void add_reproduce_command(CLI::App& app, Action& action, const std::string& command_line);
void add_export_command(CLI::App& app, Action& action);
void add_converge_command(CLI::App& app, Action& action, const std::string& command_line);

// `lpbench gemm ...`: the kernel suite (lpbench-kernels) with the arguments after `gemm`;
// nothing for any other subcommand. add_gemm_command lists it in --help.
void add_gemm_command(CLI::App& app);
std::optional<int> forward_gemm(int argc, char** argv);

// Parses argv and runs the chosen subcommand; returns the exit code (2 for a bad command line).
int run_cli(int argc, char** argv);

}  // namespace lpbench::cli
