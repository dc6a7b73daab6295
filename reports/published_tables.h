#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The published figures `lpbench reproduce` checks, kept as data (reports/tables/published.json,
// built into the program): each figure with its conditions and source.
namespace lpbench::reports {

struct PublishedRow {
  std::string label;                    // e.g. "Llama2-7B"
  std::optional<std::string> workload;  // what lpbench runs for it; none: nothing matches
  std::optional<std::string> recipe;    // the recipe compared with the table's baseline
  std::optional<int64_t> layers;        // the depth the figure was measured at
  // speedup (baseline step time / recipe step time), throughput_ratio (tokens/s over the
  // baseline's), memory_reduction (baseline peak / recipe peak); published only: time_ratio,
  // memory_ratio (recipe over baseline), tflops.
  std::string metric;
  double published = 0.0;
  std::string published_text;  // as the source words it
};

struct PublishedTable {
  std::string id;
  std::string title;
  std::string source;
  std::string figure;
  // end-to-end: lpbench runs the same comparison; partial: the same schemes under other
  // conditions; none: not an lpbench measurement (see note).
  std::string reproduction;
  std::optional<std::string> baseline_recipe;
  std::vector<std::pair<std::string, std::optional<std::string>>> conditions;  // in file order
  std::optional<std::string> condition(std::string_view key) const;  // null or absent: nothing
  std::string note;
  std::vector<PublishedRow> rows;
};

// The tables built into this lpbench.
const std::vector<PublishedTable>& published_tables();

// Tables from JSON in the same format; `origin` names it in errors. Throws InputError naming
// the first problem.
std::vector<PublishedTable> parse_published_tables(std::string_view json, std::string_view origin);

// Whether a metric can be measured from a sweep of the baseline and the recipe.
bool measurable_metric(std::string_view metric);

// The JSON the build embeds (reports/tables/published.json).
std::string_view published_tables_json();

}  // namespace lpbench::reports
