#include "harness/runner/progress.h"

#include <fmt/format.h>
#include <unistd.h>

namespace lpbench::runner {

Progress::Progress(std::vector<std::string> recipes, int64_t total_steps, std::FILE* out,
                   int64_t rank)
    : recipes_(std::move(recipes)),
      loss_(recipes_.size()),
      step_ms_(recipes_.size(), 0.0),
      done_(recipes_.size(), 0),
      total_steps_(total_steps),
      out_(out),
      terminal_(rank == 0 && isatty(fileno(out)) != 0),
      show_steps_(rank == 0),
      prefix_(rank == 0 ? "" : fmt::format("rank {}: ", rank)) {}

namespace {

std::string loss_text(const std::optional<double>& loss) {
  return loss ? fmt::format(" loss {:.4f}", *loss) : std::string();
}

}  // namespace

void Progress::step(size_t recipe, int64_t step, std::optional<double> loss, double step_ms) {
  loss_[recipe] = loss;
  step_ms_[recipe] = step_ms;
  done_[recipe] = step + 1;
  if (!show_steps_) return;
  if (terminal_) {
    print_line(false);
    return;
  }
  // Plain output (a log): each recipe's line at every tenth of the run.
  const int64_t every = std::max<int64_t>(1, total_steps_ / 10);
  if (done_[recipe] % every == 0 || done_[recipe] == total_steps_) {
    fmt::print(out_, "{}: step {}/{}{} {:.1f} ms\n", recipes_[recipe], done_[recipe], total_steps_,
               loss_text(loss), step_ms);
    std::fflush(out_);
  }
}

void Progress::print_line(bool final_line) {
  std::string line;
  for (size_t i = 0; i < recipes_.size(); ++i) {
    line += fmt::format("{}{}: step {}/{}{} {:.1f} ms", i ? " | " : "", recipes_[i], done_[i],
                        total_steps_, loss_text(loss_[i]), step_ms_[i]);
  }
  if (terminal_ && !final_line) {
    fmt::print(out_, "\r\033[K{}", line);
  } else {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
}

void Progress::message(const std::string& text) {
  if (terminal_) fmt::print(out_, "\r\033[K");
  fmt::print(out_, "{}{}\n", prefix_, text);
  std::fflush(out_);
}

void Progress::finish() {
  if (terminal_) print_line(true);
}

}  // namespace lpbench::runner
