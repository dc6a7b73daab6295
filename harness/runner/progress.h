#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace lpbench::runner {

// Progress of a sweep on stderr: one line rewritten in place on a terminal, plain lines every
// few steps otherwise (CI logs), so neither floods nor stays silent.
class Progress {
 public:
  // A data-parallel rank other than 0 (`rank` > 0) shows messages only, each after "rank N: ".
  Progress(std::vector<std::string> recipes, int64_t total_steps, std::FILE* out = stderr,
           int64_t rank = 0);
  // `loss`: none for levels without one.
  void step(size_t recipe, int64_t step, std::optional<double> loss, double step_ms);
  void message(const std::string& text);
  void finish();

 private:
  void print_line(bool final_line);

  std::vector<std::string> recipes_;
  std::vector<std::optional<double>> loss_;
  std::vector<double> step_ms_;
  std::vector<int64_t> done_;
  int64_t total_steps_;
  std::FILE* out_;
  bool terminal_;
  bool show_steps_;
  std::string prefix_;
};

}  // namespace lpbench::runner
