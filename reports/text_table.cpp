#include "reports/text_table.h"

#include <fmt/format.h>

#include <stdexcept>

#include "reports/markup.h"

namespace lpbench::reports {

namespace {

// Display width: UTF-8 continuation bytes take no column (×, –, ≈ in our cells).
size_t width(const std::string& text) {
  size_t columns = 0;
  for (unsigned char c : text)
    columns += (c & 0xC0) != 0x80 ? 1 : 0;
  return columns;
}

std::string pad(const std::string& text, size_t to, TextTable::Align align) {
  const std::string fill(to > width(text) ? to - width(text) : 0, ' ');
  return align == TextTable::Align::left ? text + fill : fill + text;
}

}  // namespace

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size()) {
    throw std::invalid_argument(
        fmt::format("table row has {} cells for {} columns", cells.size(), columns_.size()));
  }
  rows_.push_back(std::move(cells));
}

std::string TextTable::markdown() const {
  std::vector<size_t> widths;
  for (const Column& column : columns_)
    widths.push_back(std::max<size_t>(3, width(column.header)));
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], width(row[i]));
  }
  std::string out = "|";
  for (size_t i = 0; i < columns_.size(); ++i) {
    out += " " + pad(columns_[i].header, widths[i], columns_[i].align) + " |";
  }
  out += "\n|";
  for (size_t i = 0; i < columns_.size(); ++i) {
    const std::string dashes(widths[i] - 1, '-');
    out += columns_[i].align == Align::right ? " " + dashes + ": |" : " :" + dashes + " |";
  }
  out += "\n";
  for (const auto& row : rows_) {
    out += "|";
    for (size_t i = 0; i < row.size(); ++i) {
      out += " " + pad(row[i], widths[i], columns_[i].align) + " |";
    }
    out += "\n";
  }
  return out;
}

std::string TextTable::html() const {
  auto align = [](Align a) { return a == Align::right ? " class=\"num\"" : ""; };
  std::string out = "<table>\n<thead><tr>";
  for (const Column& column : columns_)
    out += fmt::format("<th{}>{}</th>", align(column.align), inline_html(column.header));
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows_) {
    out += "<tr>";
    for (size_t i = 0; i < row.size(); ++i)
      out += fmt::format("<td{}>{}</td>", align(columns_[i].align), inline_html(row[i]));
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

}  // namespace lpbench::reports
