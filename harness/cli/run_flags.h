#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "harness/config/run_options.h"

// The flags of `lpbench run`, bound onto RunConfig. Apart from run_command.cpp so that the parse
// builds without libtorch (tests/fuzz parses fuzzed command lines with it).
namespace lpbench::cli {

// Adds every flag of `lpbench run` to `run`; returns the --label option (whether it was given
// decides whether the sweep is labelled).
CLI::Option* add_run_flags(CLI::App& run, config::RunConfig& config, std::string& label);

}  // namespace lpbench::cli
