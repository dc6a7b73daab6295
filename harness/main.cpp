// lpbench's entry point: the only place that turns errors into exit codes.
#include <fmt/format.h>

#include <exception>

#include "base/errors.h"
#include "harness/cli/commands.h"

int main(int argc, char** argv) {
  try {
    return lpbench::cli::run_cli(argc, argv);
  } catch (const lpbench::InputError& error) {
    fmt::print(stderr, "lpbench: error: {}\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "lpbench: internal error: {}\n", error.what());
    return 1;
  }
}
