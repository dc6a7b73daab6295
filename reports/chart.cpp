#include "reports/chart.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

extern char** environ;

namespace lpbench::reports {

namespace {

// Okabe and Ito's palette: told apart with every common form of colour blindness.
constexpr std::array<std::string_view, 8> kPalette{"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                   "#E69F00", "#56B4E9", "#000000", "#F0E442"};

// A gnuplot double-quoted string (the terminal is noenhanced, so only \ and " are special).
std::string gnuplot_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

std::string number(double value) {
  return std::isfinite(value) ? fmt::format("{:.10g}", value) : "NaN";
}

bool drawable(const ChartSeries& s) {
  for (const ChartPoint& p : s.points) {
    if (std::isfinite(p.y)) return true;
  }
  return false;
}

std::string plot_clause(const ChartSeries& s, size_t block, size_t index) {
  const std::string_view color =
      kPalette[static_cast<size_t>(s.color >= 0 ? s.color : static_cast<int>(index)) %
               kPalette.size()];
  std::string style;
  switch (s.style) {
    case ChartSeries::Style::lines:
      style = "using 1:2 with lines lw 2";
      break;
    case ChartSeries::Style::thin_lines:
      style = "using 1:2 with lines lw 1 dt 3";
      break;
    case ChartSeries::Style::points:
      style = "using 1:2 with points pt 7 ps 0.7";
      break;
    case ChartSeries::Style::error_bars:
      style = "using 1:2:3:4 with yerrorbars pt 7 ps 0.9 lw 1.5";
      break;
    case ChartSeries::Style::error_lines:
      style = "using 1:2:3:4 with yerrorlines pt 7 ps 0.7 lw 1.5";
      break;
  }
  return fmt::format("$d{} {} lc rgb \"{}\" title {}", block, style, color,
                     gnuplot_string(s.title));
}

// A temporary file, removed at scope exit.
class TempFile {
 public:
  TempFile() {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/lpbench-chart-XXXXXX";
    const int fd = mkstemp(path_.data());
    if (fd < 0) throw std::runtime_error(fmt::format("mkstemp: {}", std::strerror(errno)));
    close(fd);
  }
  ~TempFile() { unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  std::string read() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  std::string path_;
};

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

}  // namespace

bool has_data(const Chart& chart) {
  for (const ChartSeries& s : chart.series) {
    if (drawable(s)) return true;
  }
  return false;
}

std::string gnuplot_script(const Chart& chart) {
  std::string out;
  out +=
      "set terminal svg size 760,420 noenhanced font \"sans,11\" background \"#ffffff\"\n"
      "set encoding utf8\n"
      "set datafile missing \"NaN\"\n"
      "set grid lc rgb \"#dddddd\"\n"
      "set key below\n";
  out += fmt::format("set title {}\nset xlabel {}\nset ylabel {}\n", gnuplot_string(chart.title),
                     gnuplot_string(chart.x_label), gnuplot_string(chart.y_label));
  switch (chart.x_axis) {
    case Chart::XAxis::numbers:
      break;
    case Chart::XAxis::time:
      out += "set xdata time\nset timefmt \"%Y-%m-%dT%H:%M:%S\"\nset format x \"%m-%d\\n%H:%M\"\n";
      break;
    case Chart::XAxis::categories: {
      std::string tics;
      for (size_t i = 0; i < chart.categories.size(); ++i)
        tics += fmt::format("{}{} {}", i ? ", " : "", gnuplot_string(chart.categories[i]), i);
      out += fmt::format("set xtics ({}) rotate by -20\nset xrange [-0.5:{}]\n", tics,
                         static_cast<double>(chart.categories.size()) - 0.5);
      break;
    }
  }
  if (chart.log_y) {
    // A log axis of ratios gets readable tics between the powers of ten gnuplot would label.
    std::string tics;
    for (double t : {0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0})
      tics += fmt::format("{}\"{}×\" {}", tics.empty() ? "" : ", ", t, t);
    out += fmt::format("set logscale y\nset ytics ({})\n", tics);
  }
  if (chart.y_range) {
    out += fmt::format("set yrange [{}:{}]\n", number(chart.y_range->first),
                       number(chart.y_range->second));
  }
  if (chart.reference_y) {
    out += fmt::format(
        "set arrow from graph 0, first {0} to graph 1, first {0} nohead dt 2 lc rgb \"#777777\"\n",
        number(*chart.reference_y));
    if (!chart.reference_title.empty()) {
      out += fmt::format("set label {} at graph 0.01, first {} offset 0,0.6 tc rgb \"#555555\"\n",
                         gnuplot_string(chart.reference_title), number(*chart.reference_y));
    }
  }
  std::string plot;
  size_t block = 0;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& s = chart.series[i];
    if (!drawable(s)) continue;
    const bool labelled = std::any_of(s.points.begin(), s.points.end(),
                                      [](const ChartPoint& p) { return !p.label.empty(); });
    out += fmt::format("$d{} << EOD\n", block);
    for (const ChartPoint& p : s.points) {
      const std::string x = chart.x_axis == Chart::XAxis::time ? p.time.substr(0, 19) : number(p.x);
      out += fmt::format("{} {} {} {}", x, number(p.y), number(p.low), number(p.high));
      out += labelled ? " " + gnuplot_string(p.label) + "\n" : "\n";
    }
    out += "EOD\n";
    plot += (plot.empty() ? "plot " : ", \\\n     ") + plot_clause(s, block, i);
    // The names beside the markers, in the series' data block's fifth column.
    if (labelled) {
      plot += fmt::format(
          ", \\\n     $d{} using 1:2:5 with labels left offset 0.8,0.5 tc rgb \"#333333\" notitle",
          block);
    }
    ++block;
  }
  return out + plot + "\n";
}

std::optional<std::string> find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "";
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    if (!dir.empty()) {
      const std::string candidate = std::string(dir) + "/gnuplot";
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

std::string render_svg(const std::string& gnuplot, const Chart& chart) {
  TempFile script;
  TempFile svg;
  TempFile errors;
  {
    std::ofstream out(script.path(), std::ios::binary);
    out << gnuplot_script(chart);
    if (!out) throw std::runtime_error("cannot write the gnuplot script");
  }
  // posix_spawn rather than fork: lpbench holds torch's threads, and the child only execs.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, script.path().c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, svg.path().c_str(), O_WRONLY | O_TRUNC,
                                   0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors.path().c_str(),
                                   O_WRONLY | O_TRUNC, 0);
  std::string program = gnuplot;
  char* argv[] = {program.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, gnuplot.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    throw std::runtime_error(fmt::format("cannot run {}: {}", gnuplot, std::strerror(spawned)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string message = errors.read();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    replace_all(message, "\n", " ");
    throw std::runtime_error(fmt::format("gnuplot failed drawing '{}': {}", chart.title, message));
  }
  std::string document = svg.read();
  if (document.find("<svg") == std::string::npos) {
    throw std::runtime_error(fmt::format("gnuplot wrote no SVG for '{}'", chart.title));
  }
  return document;
}

std::string inline_svg(const std::string& svg, const std::string& id_prefix,
                       const std::string& title) {
  std::string out = svg.substr(std::min(svg.find("<svg"), svg.size()));
  replace_all(out, " id='", " id='" + id_prefix);
  replace_all(out, " id=\"", " id=\"" + id_prefix);
  replace_all(out, "href='#", "href='#" + id_prefix);
  replace_all(out, "href=\"#", "href=\"#" + id_prefix);
  replace_all(out, "url(#", "url(#" + id_prefix);
  std::string escaped;
  for (char c : title) {
    if (c == '<') {
      escaped += "&lt;";
    } else if (c == '&') {
      escaped += "&amp;";
    } else {
      escaped += c;
    }
  }
  replace_all(out, "<title>Gnuplot</title>", "<title>" + escaped + "</title>");
  return out;
}

}  // namespace lpbench::reports
