#include "workloads/levels/gemm_level.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <tuple>

#include "kernels/torch/rounding_seed.h"

namespace lpbench::workloads {

namespace {

using kernels::GemmKind;
using kernels::Side;

// Activations and gradients near unit scale, weights small, as in a model at initialization.
at::Tensor draw(int64_t rows, int64_t cols, double scale, const torch::Device& device) {
  return (torch::randn({rows, cols}, torch::dtype(torch::kFloat).device(device)) * scale)
      .to(torch::kBFloat16);
}

double product_flops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

}  // namespace

GemmLevel::GemmLevel(const WorkloadSpec& spec, const ModelConfig& model,
                     const kernels::Recipe& recipe, const TrainingOptions& options,
                     const torch::Device& device)
    : gemms_(recipe.gemms), prequantized_(spec.prequantized) {
  torch::manual_seed(options.seed);
  kernels::seed_stochastic_rounding(options.seed);
  const std::string variant =
      prequantized_ ? "operands quantized once, products timed alone"
                    : "operands quantized in every step, as training does, then the products";
  if (spec.shape) {
    bare_shape_ = true;
    tokens_ = spec.shape->m;
    const GemmShape& s = *spec.shape;
    products_.push_back({spec.text(), GemmKind::fprop, s, {}, {}});
    sources_.push_back({spec.text(),
                        draw(s.m, s.k, 1.0, device),
                        draw(s.n, s.k, 0.05, device),
                        at::Tensor(),
                        {0}});
    decisions_.push_back({spec.text(),
                          kernels::ModuleKind::linear,
                          {gemms_.fprop, gemms_.fprop, gemms_.fprop},
                          gemms_.fprop.quantized(),
                          "gemm level: one product under the recipe's fprop spec; " + variant});
  } else {
    tokens_ = options.micro_batch * options.seq_len;
    for (const LinearShape& linear : linear_shapes(model)) {
      if (!spec.part.empty() && linear.part != spec.part) continue;
      Sources sources{linear.part,
                      draw(tokens_, linear.in_features, 1.0, device),
                      draw(linear.out_features, linear.in_features, 0.05, device),
                      draw(tokens_, linear.out_features, 1.0, device),
                      {}};
      for (const auto& [kind, shape] : training_gemms(linear, tokens_)) {
        sources.products.push_back(products_.size());
        products_.push_back(
            {fmt::format("{}.{}", linear.part, kernels::to_string(kind)), kind, shape, {}, {}});
      }
      sources_.push_back(std::move(sources));
      decisions_.push_back({linear.part, kernels::ModuleKind::linear, gemms_,
                            gemms_.any_quantized(),
                            "gemm level: every product under the recipe's specs; " + variant});
    }
  }
  if (prequantized_) {
    for (const Sources& sources : sources_)
      prepare(sources);
  }
}

void GemmLevel::prepare(const Sources& s) {
  if (bare_shape_) {
    Product& p = products_[s.products[0]];
    p.a = kernels::prepare_operand(s.x, gemms_.fprop, GemmKind::fprop, Side::lhs, false);
    p.b = kernels::prepare_operand(s.w, gemms_.fprop, GemmKind::fprop, Side::rhs, false);
    return;
  }
  // As the linear layer reads its sources: X for fprop and, transposed, wgrad; W for fprop and,
  // transposed, dgrad; dY for dgrad and, transposed, wgrad.
  Product& fprop = products_[s.products[0]];
  Product& dgrad = products_[s.products[1]];
  Product& wgrad = products_[s.products[2]];
  std::tie(fprop.a, wgrad.b) = kernels::prepare_operand_pair(
      s.x, {gemms_.fprop, GemmKind::fprop, Side::lhs}, {gemms_.wgrad, GemmKind::wgrad, Side::rhs});
  std::tie(fprop.b, dgrad.b) = kernels::prepare_operand_pair(
      s.w, {gemms_.fprop, GemmKind::fprop, Side::rhs}, {gemms_.dgrad, GemmKind::dgrad, Side::rhs});
  std::tie(dgrad.a, wgrad.a) = kernels::prepare_operand_pair(
      s.dy, {gemms_.dgrad, GemmKind::dgrad, Side::lhs}, {gemms_.wgrad, GemmKind::wgrad, Side::lhs});
}

StepOutput GemmLevel::step(int64_t /*index*/) {
  for (const Sources& sources : sources_) {
    if (!prequantized_) prepare(sources);
    for (size_t i : sources.products) {
      Product& p = products_[i];
      last_ = kernels::gemm_nt(p.a, p.b, gemms_[p.kind], torch::kBFloat16, p.kind, sources.part);
      // Quantized in the step, an operand lives as long as a training step keeps it.
      if (!prequantized_) p.a = p.b = {};
    }
  }
  fallback_.absorb();
  return {std::nullopt, std::nullopt, 0.0, tokens_};
}

bool GemmLevel::last_step_finite() const {
  return !last_.defined() || torch::isfinite(last_).all().item<bool>();
}

double GemmLevel::flops_per_step() const {
  double flops = 0.0;
  for (const Product& p : products_)
    flops += product_flops(p.shape);
  return flops;
}

FlopCount GemmLevel::gemm_flops() const {
  FlopCount count;
  for (const Product& p : products_)
    count.add(gemms_[p.kind].lhs, product_flops(p.shape));
  return count;
}

std::string GemmLevel::shape_description() const {
  std::string text;
  for (const Product& p : products_) {
    text += fmt::format("{}{} {}x{}x{} {}", text.empty() ? "" : "; ", p.name, p.shape.m, p.shape.n,
                        p.shape.k, kernels::describe(gemms_[p.kind]));
  }
  return text + (prequantized_ ? " (prequantized)" : " (quantization in the step)");
}

}  // namespace lpbench::workloads
