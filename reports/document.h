#pragma once

#include <string>
#include <vector>

#include "reports/chart.h"
#include "reports/text_table.h"

namespace lpbench::reports {

// A figure of a report: a chart, the SVG file it is written to, and what it shows.
struct Figure {
  std::string file;  // e.g. "sweep-3-loss.svg", relative to the report's folder
  std::string caption;
  Chart chart;
  std::string svg;  // filled in when the chart is drawn
};

// A report as a sequence of blocks, written as Markdown (figures linked as SVG files) and as
// one self-contained HTML page (figures inline).
class Document {
 public:
  explicit Document(std::string title) : title_(std::move(title)) {}

  void heading(int level, std::string text);
  void paragraph(std::string text);  // may hold `code` and **bold**
  void code(std::string text);
  void list(std::vector<std::string> items);
  void table(TextTable table);
  void figure(Figure figure);

  std::vector<Figure*> figures();
  std::string markdown() const;
  // A page that needs no network: styles and charts inline, a content security policy that
  // forbids loading anything, and a small script that records load errors and counts the
  // charts drawn into a hidden footer (#lpbench-load-check), which tests read back.
  std::string html() const;

 private:
  struct Block {
    enum class Kind { heading, paragraph, code, list, table, figure };
    Kind kind = Kind::paragraph;
    int level = 0;
    std::string text;
    std::vector<std::string> items;
    std::vector<TextTable> table;  // zero or one
    std::vector<Figure> figure;    // zero or one
  };
  std::string title_;
  std::vector<Block> blocks_;
};

}  // namespace lpbench::reports
