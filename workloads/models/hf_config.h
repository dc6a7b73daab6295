#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "workloads/models/model_config.h"

namespace lpbench::workloads {

// Reads a Hugging Face config.json of the Llama, Mistral, Qwen2, Qwen3 and Mixtral families.
// Throws std::invalid_argument naming the file and the missing or ill-typed field, or the
// unsupported architecture. What lpbench does not model is said in `notes` (Qwen2's q/k/v biases,
// Mistral's sliding window), never silently dropped.
struct ImportedModel {
  ModelConfig config;
  std::string notes;
};

ImportedModel load_hf_config(const std::string& path);
ImportedModel parse_hf_config(const nlohmann::json& json, const std::string& source);

// A built-in name, or a path to a config.json (anything with a '/' or ending in .json).
// Throws std::invalid_argument naming the problem and the valid names.
ImportedModel resolve_model(const std::string& name_or_path);

}  // namespace lpbench::workloads
