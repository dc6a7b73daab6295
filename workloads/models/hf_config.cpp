#include "workloads/models/hf_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

namespace lpbench::workloads {

namespace {

using nlohmann::json;

const std::vector<std::string>& families() {
  static const std::vector<std::string> names{"llama", "mistral", "qwen2", "qwen3", "mixtral"};
  return names;
}

class Reader {
 public:
  Reader(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  int64_t integer(const char* field) const {
    const json& value = require(field);
    if (!value.is_number_integer()) fail_type(field, "an integer", value);
    return value.get<int64_t>();
  }
  int64_t integer_or(const char* field, int64_t fallback) const {
    return has(field) ? integer(field) : fallback;
  }
  double number_or(const char* field, double fallback) const {
    if (!has(field)) return fallback;
    const json& value = j_.at(field);
    if (!value.is_number()) fail_type(field, "a number", value);
    return value.get<double>();
  }
  bool boolean_or(const char* field, bool fallback) const {
    if (!has(field)) return fallback;
    const json& value = j_.at(field);
    if (!value.is_boolean()) fail_type(field, "true or false", value);
    return value.get<bool>();
  }
  bool has(const char* field) const { return j_.contains(field) && !j_.at(field).is_null(); }
  const json& require(const char* field) const {
    if (!has(field)) {
      throw std::invalid_argument(fmt::format("{}: field '{}' is missing", source_, field));
    }
    return j_.at(field);
  }
  [[noreturn]] void fail_type(const char* field, const char* expected, const json& got) const {
    throw std::invalid_argument(fmt::format("{}: field '{}' must be {}, got {} ({})", source_,
                                            field, expected, got.type_name(), got.dump()));
  }

 private:
  const json& j_;
  std::string source_;
};

std::string family_of(const json& j, const std::string& source) {
  std::string type;
  if (j.contains("model_type") && j.at("model_type").is_string()) {
    type = j.at("model_type").get<std::string>();
  } else if (j.contains("architectures") && j.at("architectures").is_array() &&
             !j.at("architectures").empty() && j.at("architectures")[0].is_string()) {
    const std::string arch = j.at("architectures")[0].get<std::string>();
    for (const std::string& family : families()) {
      if (arch.size() >= family.size() &&
          std::equal(family.begin(), family.end(), arch.begin(),
                     [](char a, char b) { return a == std::tolower(b); })) {
        type = family;
      }
    }
    if (type.empty()) type = arch;
  } else {
    throw std::invalid_argument(fmt::format(
        "{}: neither 'model_type' nor 'architectures' says what model this is", source));
  }
  for (const std::string& family : families()) {
    if (family == type) return type;
  }
  // Escaped as in JSON, so that a name holding a newline still makes a one-line error.
  const std::string escaped = json(type).dump();
  throw std::invalid_argument(fmt::format("{}: unsupported architecture '{}'; supported: {}",
                                          source, escaped.substr(1, escaped.size() - 2),
                                          fmt::join(families(), ", ")));
}

}  // namespace

ImportedModel parse_hf_config(const json& j, const std::string& source) {
  if (!j.is_object()) {
    throw std::invalid_argument(fmt::format("{}: a config.json holds one JSON object", source));
  }
  ImportedModel imported;
  ModelConfig& c = imported.config;
  const Reader r(j, source);
  c.family = family_of(j, source);
  c.name = source;
  c.vocab_size = r.integer("vocab_size");
  c.hidden_size = r.integer("hidden_size");
  c.intermediate_size = r.integer("intermediate_size");
  c.num_layers = r.integer("num_hidden_layers");
  c.published_layers = c.num_layers;
  c.num_heads = r.integer("num_attention_heads");
  c.num_kv_heads = r.integer_or("num_key_value_heads", c.num_heads);
  c.head_dim = r.integer_or("head_dim", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  c.rope_theta = r.number_or("rope_theta", 10000.0);
  c.norm_eps = r.number_or("rms_norm_eps", 1e-6);
  c.tie_embeddings = r.boolean_or("tie_word_embeddings", false);
  c.qk_norm = c.family == "qwen3";
  if (c.family == "mixtral") {
    c.num_experts = r.integer("num_local_experts");
    c.experts_per_token = r.integer("num_experts_per_tok");
  }
  if (r.has("rope_scaling")) {
    const json& s = j.at("rope_scaling");
    if (!s.is_object()) r.fail_type("rope_scaling", "an object or null", s);
    const Reader rs(s, source + " rope_scaling");
    const json& type = s.contains("rope_type") ? s.at("rope_type") : rs.require("type");
    if (!type.is_string() || type.get<std::string>() != "llama3") {
      throw std::invalid_argument(fmt::format(
          "{}: unsupported rope_scaling type {}; supported: llama3", source, type.dump()));
    }
    c.rope_scaling = {"llama3", rs.number_or("factor", 8.0), rs.number_or("low_freq_factor", 1.0),
                      rs.number_or("high_freq_factor", 4.0),
                      rs.integer_or("original_max_position_embeddings", 8192)};
  }
  if (c.family == "qwen2") imported.notes += "the q/k/v projection biases are not modeled; ";
  if (r.has("sliding_window") && c.family != "qwen2" && c.family != "qwen3") {
    imported.notes += "attention is full causal, not sliding-window; ";
  }
  if (const std::string problem = check_model_config(c); !problem.empty()) {
    throw std::invalid_argument(fmt::format("{}: {}", source, problem));
  }
  return imported;
}

ImportedModel load_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(fmt::format("cannot read model config '{}'", path));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& error) {  // a syntax error, or a number past a double
    throw std::invalid_argument(
        fmt::format("model config '{}' is not valid JSON: {}", path, error.what()));
  }
  return parse_hf_config(j, path);
}

ImportedModel resolve_model(const std::string& name_or_path) {
  const bool looks_like_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
  if (looks_like_path) return load_hf_config(name_or_path);
  try {
    return {builtin_model(name_or_path), ""};
  } catch (const std::out_of_range&) {
    throw std::invalid_argument(
        fmt::format("unknown model '{}'; valid models: {}, or a path to a Hugging Face config.json",
                    name_or_path, fmt::join(builtin_model_names(), ", ")));
  }
}

}  // namespace lpbench::workloads
