#include "workloads/levels/workload.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "workloads/levels/gemm_level.h"
#include "workloads/levels/layer_level.h"
#include "workloads/levels/linear_level.h"
#include "workloads/levels/model_level.h"

namespace lpbench::workloads {

namespace {

constexpr std::array<Level, 4> kLevels{Level::gemm, Level::linear, Level::layer, Level::model};
constexpr std::string_view kPrequantized = "prequantized";

std::optional<int64_t> parse_positive(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

// "MxNxK" → a shape, or nothing when the text is not one.
std::optional<GemmShape> parse_shape(std::string_view text) {
  const size_t first = text.find('x');
  const size_t second = first == std::string_view::npos ? first : text.find('x', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const auto m = parse_positive(text.substr(0, first));
  const auto n = parse_positive(text.substr(first + 1, second - first - 1));
  const auto k = parse_positive(text.substr(second + 1));
  if (!m || !n || !k) return std::nullopt;
  return GemmShape{*m, *n, *k};
}

bool is_part(std::string_view text) {
  for (const std::string& part : linear_part_names()) {
    if (part == text) return true;
  }
  return false;
}

}  // namespace

std::string_view to_string(Level level) {
  switch (level) {
    case Level::gemm:
      return "gemm";
    case Level::linear:
      return "linear";
    case Level::layer:
      return "layer";
    case Level::model:
      return "model";
  }
  return "?";
}

std::string_view to_string(Sharding sharding) {
  switch (sharding) {
    case Sharding::zero1:
      return "zero1";
    case Sharding::zero2:
      return "zero2";
    case Sharding::zero3:
      return "zero3";
  }
  return "?";
}

std::optional<Sharding> parse_sharding(std::string_view text) {
  for (const Sharding s : {Sharding::zero1, Sharding::zero2, Sharding::zero3}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

std::vector<std::string> level_names() {
  std::vector<std::string> names;
  for (Level level : kLevels)
    names.emplace_back(to_string(level));
  return names;
}

std::vector<std::string> linear_part_names() {
  return {"qkv", "out", "gate_up", "down", "output"};
}

std::string WorkloadSpec::text() const {
  std::string text = shape ? fmt::format("gemm:{}x{}x{}", shape->m, shape->n, shape->k)
                           : fmt::format("{}:{}", to_string(level), model);
  if (!shape && !part.empty()) text += ":" + part;
  if (prequantized) text += std::string(":") + std::string(kPrequantized);
  return text;
}

WorkloadSpec parse_workload(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    throw std::invalid_argument(fmt::format(
        "workload '{}' is not of the form <level>:<model>[:<part>] (for example model:tiny; "
        "gemm:<model>[:<part>][:prequantized] or gemm:<M>x<N>x<K>[:prequantized])",
        text));
  }
  const std::string_view level_text = text.substr(0, colon);
  std::string_view rest = text.substr(colon + 1);
  WorkloadSpec spec;
  bool known = false;
  for (Level level : kLevels) {
    if (to_string(level) == level_text) {
      spec.level = level;
      known = true;
    }
  }
  if (!known) {
    throw std::invalid_argument(fmt::format("unknown level '{}' in workload '{}'; valid levels: {}",
                                            level_text, text, fmt::join(level_names(), ", ")));
  }
  if (rest.ends_with(std::string(":") + std::string(kPrequantized))) {
    if (spec.level != Level::gemm) {
      throw std::invalid_argument(
          fmt::format("workload '{}': only the gemm level takes :{} (the other levels quantize "
                      "in every step, as training does)",
                      text, kPrequantized));
    }
    spec.prequantized = true;
    rest.remove_suffix(kPrequantized.size() + 1);
  }
  if (spec.level == Level::gemm) {
    if (auto shape = parse_shape(rest)) {
      // Past any real layer, and small enough that M·N·K (and its FLOPs) stays in int64.
      constexpr int64_t kMaxDimension = int64_t{1} << 20;
      if (std::max({shape->m, shape->n, shape->k}) > kMaxDimension) {
        throw std::invalid_argument(
            fmt::format("workload '{}': each GEMM dimension is at most {}", text, kMaxDimension));
      }
      spec.shape = shape;
      return spec;
    }
  }
  const size_t last = rest.rfind(':');
  if (last != std::string_view::npos && is_part(rest.substr(last + 1))) {
    spec.part = std::string(rest.substr(last + 1));
    rest = rest.substr(0, last);
    if (spec.level != Level::gemm && spec.level != Level::linear) {
      throw std::invalid_argument(fmt::format(
          "workload '{}': only the gemm and linear levels take a part (:{})", text, spec.part));
    }
  }
  if (rest.empty()) {
    throw std::invalid_argument(fmt::format("workload '{}' names no model", text));
  }
  spec.model = std::string(rest);
  if (spec.level == Level::linear && spec.part.empty()) spec.part = "gate_up";
  return spec;
}

std::vector<LinearShape> linear_shapes(const ModelConfig& c) {
  const int64_t q = c.num_heads * c.head_dim;
  const int64_t kv = c.num_kv_heads * c.head_dim;
  return {{"qkv", c.hidden_size, q + 2 * kv},
          {"out", q, c.hidden_size},
          {"gate_up", c.hidden_size, 2 * c.intermediate_size},
          {"down", c.intermediate_size, c.hidden_size},
          {"output", c.hidden_size, c.vocab_size}};
}

std::vector<std::pair<kernels::GemmKind, GemmShape>> training_gemms(const LinearShape& linear,
                                                                    int64_t tokens) {
  const int64_t in = linear.in_features;
  const int64_t out = linear.out_features;
  return {
      {kernels::GemmKind::fprop, {tokens, out, in}},  // Y[T,out] = X[T,in]·W[out,in]ᵀ
      {kernels::GemmKind::dgrad, {tokens, in, out}},  // dX[T,in] = dY[T,out]·(Wᵀ)ᵀ
      {kernels::GemmKind::wgrad, {out, in, tokens}},  // dW[out,in] = dYᵀ[out,T]·(Xᵀ)ᵀ
  };
}

int64_t recomputed_layers(const TrainingOptions& options, int64_t num_layers) {
  if (!options.activation_checkpointing) return 0;
  if (options.checkpointed_layers < 0) return num_layers;
  return std::min(options.checkpointed_layers, num_layers);
}

bool embedding_gradient_by_rows(const TrainingOptions& options, bool tied_embeddings) {
  // Data parallel reduces and shards dense gradients, micro-batches would sum by rows in an order
  // of their own, a tied table's gradient is the output layer's dense one too, and torch's
  // unfused AdamW takes no sparse gradient.
  return options.embedding_gradient_by_rows && options.fusion == Fusion::fused &&
         options.data_parallel_size == 0 && options.grad_accum == 1 && !tied_embeddings;
}

double learning_rate_at(int64_t step, const TrainingOptions& o) {
  if (o.lr_warmup_steps > 0 && step < o.lr_warmup_steps) {
    return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.lr_warmup_steps);
  }
  const int64_t decay_steps = std::max<int64_t>(1, o.total_steps - o.lr_warmup_steps);
  const double progress = std::min(
      1.0, static_cast<double>(step - o.lr_warmup_steps) / static_cast<double>(decay_steps));
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return o.lr * (o.min_lr_ratio + (1.0 - o.min_lr_ratio) * cosine);
}

std::unique_ptr<Workload> make_workload(const WorkloadSpec& spec, const ModelConfig& model,
                                        const kernels::Recipe& recipe,
                                        const TrainingOptions& options,
                                        const torch::Device& device) {
  switch (spec.level) {
    case Level::gemm:
      return std::make_unique<GemmLevel>(spec, model, recipe, options, device);
    case Level::linear:
      return std::make_unique<LinearLevel>(spec, model, recipe, options, device);
    case Level::layer:
      return std::make_unique<LayerLevel>(model, recipe, options, device);
    case Level::model:
      return std::make_unique<ModelLevel>(model, recipe, options, device);
  }
  throw std::logic_error("unknown level");
}

}  // namespace lpbench::workloads
