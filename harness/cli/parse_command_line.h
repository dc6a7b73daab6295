#pragma once

#include <CLI/CLI.hpp>

#include <stdexcept>
#include <string>

namespace lpbench::cli {

// CLI11's parse, with the two standard-library errors its value conversions let through turned
// into a CLI::ParseError like every other bad value: a flag given a number past long long's
// range (`--no-interleave=99999999999999999999`) threw std::out_of_range from std::stoll, which
// reached the user as "internal error: stoll" (found by tests/fuzz).
inline void parse_command_line(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const std::out_of_range&) {
    throw CLI::ConversionError(
        "an option's value is out of range (a flag takes true, false or a small number)");
  } catch (const std::invalid_argument&) {
    throw CLI::ConversionError("an option's value is not a value it takes");
  }
}

}  // namespace lpbench::cli
