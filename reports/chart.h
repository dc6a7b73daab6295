#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

// A chart as data, drawn by gnuplot (Debian's gnuplot-nox) into SVG. lpbench writes the plot
// script with the data inline and runs gnuplot as a separate program.
namespace lpbench::reports {

struct ChartPoint {
  double x = 0.0;
  double y = 0.0;
  // The spread drawn as an error bar (p10–p90), where the series has one.
  double low = 0.0;
  double high = 0.0;
  std::string time;   // the x value as ISO 8601 UTC, for a time axis
  std::string label;  // written beside the marker where not empty, e.g. a recipe's name
};

struct ChartSeries {
  enum class Style {
    lines,        // a curve, e.g. loss per step
    thin_lines,   // a faint curve under a smoothed one
    points,       // markers only, e.g. validation loss
    error_bars,   // markers with p10–p90 bars, e.g. speedup per recipe
    error_lines,  // markers with bars, joined, e.g. a nightly series
  };
  std::string title;
  Style style = Style::lines;
  int color = -1;                  // an index into the palette; -1: the series' own index
  std::vector<ChartPoint> points;  // non-finite values are left out of the drawing
};

struct Chart {
  enum class XAxis { numbers, time, categories };
  std::string title;
  std::string x_label;
  std::string y_label;
  XAxis x_axis = XAxis::numbers;
  std::vector<std::string> categories;               // x = 0, 1, … on a category axis
  std::optional<std::pair<double, double>> y_range;  // otherwise gnuplot's autoscale
  bool log_y = false;                                // ratios: 2× and 0.5× equally far from 1×
  std::optional<double> reference_y;                 // a horizontal line: 1× speedup, a 0 % gap
  std::string reference_title;
  std::vector<ChartSeries> series;
};

// Whether any series has a point to draw (gnuplot fails on a plot with no data).
bool has_data(const Chart& chart);

// The gnuplot script that draws `chart` as SVG on its standard output.
std::string gnuplot_script(const Chart& chart);

// The gnuplot program on PATH, or nothing where it is not installed.
std::optional<std::string> find_gnuplot();

// Runs gnuplot on the chart's script; returns the SVG document. Throws std::runtime_error with
// gnuplot's message when it fails.
std::string render_svg(const std::string& gnuplot, const Chart& chart);

// An SVG document made fit to sit inline in an HTML page beside others: the XML declaration
// dropped, every id prefixed with `id_prefix` (gnuplot names its markers alike in every chart),
// and the title set.
std::string inline_svg(const std::string& svg, const std::string& id_prefix,
                       const std::string& title);

}  // namespace lpbench::reports
