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
  Progress(std::vector<std::string> recipes, int64_t total_steps, std::FILE* out = stderr);
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
};

}  // namespace lpbench::runner
