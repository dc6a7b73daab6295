#pragma once

#include <string>
#include <vector>

namespace lpbench::reports {

// A Markdown table with its columns padded to line up, so it reads in a terminal and renders on
// a code-review page alike.
class TextTable {
 public:
  enum class Align { left, right };
  struct Column {
    std::string header;
    Align align = Align::left;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells);  // one cell per column
  std::string markdown() const;
  // The same table as an HTML <table>; cells may hold `code` and **bold** as in Markdown.
  std::string html() const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace lpbench::reports
