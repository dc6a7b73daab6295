#include <fmt/format.h>

#include "base/env/build_info.h"
#include "harness/cli/commands.h"
#include "harness/cli/parse_command_line.h"

namespace lpbench::cli {

namespace {

// The invocation as one shell-pasteable line: arguments quoted where the shell would need it.
std::string join_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-_=+,.:/@%") == std::string::npos;
    if (!plain) {
      std::string quoted = "'";
      for (char c : arg)
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = quoted + "'";
    }
    line += (i ? " " : "") + arg;
  }
  return line;
}

}  // namespace

int run_cli(int argc, char** argv) {
  if (const std::optional<int> code = forward_gemm(argc, argv)) return *code;
  CLI::App app{"lpbench: BF16, INT8 and FP8 training paths of LLMs, measured and compared"};
  app.set_version_flag("--version", std::string(env::build_info().version));
  app.require_subcommand(1);
  Action action;
  add_run_command(app, action, join_command_line(argc, argv));
  add_report_command(app, action);
  add_list_command(app, action);
  add_data_command(app, action);
  add_compare_command(app, action);
  add_reproduce_command(app, action, join_command_line(argc, argv));
  add_export_command(app, action);
  add_converge_command(app, action, join_command_line(argc, argv));
  add_gemm_command(app);
  try {
    parse_command_line(app, argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    fmt::print(stderr, "lpbench: error: {}; see lpbench --help\n", error.what());
    return 2;
  }
  return action();
}

}  // namespace lpbench::cli
