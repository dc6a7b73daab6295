#include "harness/cli/diagnostics_option.h"

#include <fmt/format.h>

#include <charconv>

#include "base/errors.h"

namespace lpbench::cli {

void DiagnosticsOption::add_to(CLI::App& command) {
  option_ = command.add_flag(
      fmt::format("--diagnostics{{{}}}", kDefaultDiagnosticsEvery), *text_,
      fmt::format("Quantization diagnostics of every quantized GEMM operand (amax, scale, SQNR, "
                  "clipped and flushed shares) every K steps and the last, as --diagnostics=K "
                  "(alone: every {}); sampled steps stay out of the timing statistics",
                  kDefaultDiagnosticsEvery));
}

int64_t DiagnosticsOption::every() const {
  if (option_ == nullptr || option_->count() == 0) return 0;
  const std::string& text = *text_;
  int64_t k = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), k);
  if (error != std::errc() || end != text.data() + text.size() || k < 1) {
    throw InputError(fmt::format(
        "--diagnostics={} is not a step count: give a positive integer, e.g. --diagnostics={} "
        "(--diagnostics alone samples every {} steps)",
        text, kDefaultDiagnosticsEvery, kDefaultDiagnosticsEvery));
  }
  return k;
}

}  // namespace lpbench::cli
