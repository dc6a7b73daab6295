#include "reports/published_tables.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "base/errors.h"

namespace lpbench::reports {

namespace {

constexpr int kFormat = 1;
const std::set<std::string, std::less<>> kReproductions{"end-to-end", "partial", "none"};
const std::set<std::string, std::less<>> kMetrics{
    "speedup", "throughput_ratio", "memory_reduction", "time_ratio", "memory_ratio", "tflops"};

// ordered_json keeps the file's order of keys, which the conditions are printed in.
using json = nlohmann::ordered_json;

[[noreturn]] void bad(std::string_view origin, const std::string& where, std::string_view what) {
  throw InputError(fmt::format("{}: {}: {}", origin, where, what));
}

std::string text(const json& object, const char* key, std::string_view origin,
                 const std::string& where) {
  if (!object.contains(key) || !object[key].is_string()) {
    bad(origin, where, fmt::format("'{}' must be a string", key));
  }
  return object[key].get<std::string>();
}

std::optional<std::string> optional_text(const json& object, const char* key,
                                         std::string_view origin, const std::string& where) {
  if (!object.contains(key) || object[key].is_null()) return std::nullopt;
  if (!object[key].is_string()) bad(origin, where, fmt::format("'{}' must be a string", key));
  return object[key].get<std::string>();
}

PublishedRow parse_row(const json& r, std::string_view origin, const std::string& where) {
  if (!r.is_object()) bad(origin, where, "a row must be an object");
  PublishedRow row;
  row.label = text(r, "label", origin, where);
  row.workload = optional_text(r, "workload", origin, where);
  row.recipe = optional_text(r, "recipe", origin, where);
  if (r.contains("layers") && !r["layers"].is_null()) {
    if (!r["layers"].is_number_integer() || r["layers"].get<int64_t>() <= 0) {
      bad(origin, where, "'layers' must be a positive integer");
    }
    row.layers = r["layers"].get<int64_t>();
  }
  row.metric = text(r, "metric", origin, where);
  if (!kMetrics.count(row.metric)) {
    bad(origin, where,
        fmt::format("unknown metric '{}'; valid: speedup, throughput_ratio, memory_reduction, "
                    "time_ratio, memory_ratio, tflops",
                    row.metric));
  }
  if (!r.contains("published") || !r["published"].is_number()) {
    bad(origin, where, "'published' must be a number");
  }
  row.published = r["published"].get<double>();
  row.published_text = text(r, "published_text", origin, where);
  if (row.workload.has_value() != row.recipe.has_value()) {
    bad(origin, where, "a row names both a workload and a recipe, or neither");
  }
  if (row.workload && !measurable_metric(row.metric)) {
    bad(origin, where, fmt::format("metric '{}' cannot be measured from a sweep", row.metric));
  }
  return row;
}

PublishedTable parse_table(const json& t, std::string_view origin, const std::string& where) {
  if (!t.is_object()) bad(origin, where, "a table must be an object");
  PublishedTable table;
  table.id = text(t, "id", origin, where);
  const std::string at = fmt::format("table '{}'", table.id);
  table.title = text(t, "title", origin, at);
  table.source = text(t, "source", origin, at);
  table.figure = text(t, "figure", origin, at);
  table.reproduction = text(t, "reproduction", origin, at);
  if (!kReproductions.count(table.reproduction)) {
    bad(origin, at, "'reproduction' must be end-to-end, partial or none");
  }
  table.baseline_recipe = optional_text(t, "baseline_recipe", origin, at);
  table.note = text(t, "note", origin, at);
  if (t.contains("conditions")) {
    if (!t["conditions"].is_object()) bad(origin, at, "'conditions' must be an object");
    for (const auto& [key, value] : t["conditions"].items()) {
      if (!value.is_null() && !value.is_string()) {
        bad(origin, at, fmt::format("condition '{}' must be a string or null", key));
      }
      table.conditions.emplace_back(
          key, value.is_null() ? std::nullopt : std::optional<std::string>(value));
    }
  }
  if (!t.contains("rows") || !t["rows"].is_array()) bad(origin, at, "'rows' must be an array");
  for (size_t i = 0; i < t["rows"].size(); ++i) {
    table.rows.push_back(parse_row(t["rows"][i], origin, fmt::format("{}, row {}", at, i + 1)));
  }
  const bool runs_rows = std::any_of(table.rows.begin(), table.rows.end(),
                                     [](const PublishedRow& r) { return r.workload.has_value(); });
  if (runs_rows && (table.reproduction == "none" || !table.baseline_recipe)) {
    bad(origin, at,
        "rows with a workload need a baseline_recipe and a reproduction other than none");
  }
  return table;
}

}  // namespace

std::optional<std::string> PublishedTable::condition(std::string_view key) const {
  for (const auto& [k, v] : conditions) {
    if (k == key) return v;
  }
  return std::nullopt;
}

bool measurable_metric(std::string_view metric) {
  return metric == "speedup" || metric == "throughput_ratio" || metric == "memory_reduction";
}

std::vector<PublishedTable> parse_published_tables(std::string_view text_json,
                                                   std::string_view origin) {
  const json doc = json::parse(text_json, nullptr, false);
  if (doc.is_discarded()) bad(origin, "file", "not valid JSON");
  if (!doc.is_object() || doc.value("format", 0) != kFormat) {
    bad(origin, "file", fmt::format("expected an object with \"format\": {}", kFormat));
  }
  if (!doc.contains("tables") || !doc["tables"].is_array() || doc["tables"].empty()) {
    bad(origin, "file", "'tables' must be a non-empty array");
  }
  std::vector<PublishedTable> tables;
  std::set<std::string> ids;
  for (size_t i = 0; i < doc["tables"].size(); ++i) {
    tables.push_back(parse_table(doc["tables"][i], origin, fmt::format("table {}", i + 1)));
    if (!ids.insert(tables.back().id).second) {
      bad(origin, fmt::format("table '{}'", tables.back().id), "the id is used twice");
    }
  }
  return tables;
}

const std::vector<PublishedTable>& published_tables() {
  static const std::vector<PublishedTable> tables =
      parse_published_tables(published_tables_json(), "reports/tables/published.json");
  return tables;
}

}  // namespace lpbench::reports
