// Fuzzes the Hugging Face config.json import: any bytes either give a model whose dimensions are
// positive and whose parameter and FLOP counts are finite and positive, or a one-line
// std::invalid_argument. Any other exception, a crash or undefined behaviour fails.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "workloads/models/hf_config.h"

namespace {

void require_one_line(std::string_view message) {
  if (message.empty() || message.find('\n') != std::string_view::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    // load_hf_config puts this message in its one-line error.
    require_one_line(error.what());
    return 0;
  }
  try {
    const lpbench::workloads::ImportedModel imported =
        lpbench::workloads::parse_hf_config(json, "fuzz/config.json");
    const lpbench::workloads::ModelConfig& c = imported.config;
    if (c.parameter_count() <= 0 || c.matmul_parameter_count(true) <= 0) std::abort();
    const double flops = c.flops_per_token(int64_t{1} << 24);
    if (!std::isfinite(flops) || flops <= 0.0) std::abort();
  } catch (const std::invalid_argument& error) {
    require_one_line(error.what());
  }
  return 0;
}
