#include "workloads/levels/gemm_level.h"

#include <fmt/format.h>
#include <torch/torch.h>

namespace lpbench::workloads {

namespace {

kernels::GemmOperand random_operand(int64_t rows, int64_t cols, double scale,
                                    const kernels::GemmSpec& spec, kernels::GemmKind kind,
                                    kernels::Side side, const torch::Device& device) {
  const torch::Tensor t =
      (torch::randn({rows, cols}, torch::dtype(torch::kFloat).device(device)) * scale)
          .to(torch::kBFloat16);
  return kernels::prepare_operand(t, spec, kind, side, /*transpose=*/false);
}

}  // namespace

GemmLevel::GemmLevel(const WorkloadSpec& spec, const ModelConfig& model,
                     const kernels::Recipe& recipe, const TrainingOptions& options,
                     const torch::Device& device) {
  torch::manual_seed(options.seed);
  auto add = [&](const std::string& name, const kernels::GemmSpec& gemm, kernels::GemmKind kind,
                 const GemmShape& shape) {
    products_.push_back(
        {name, gemm, kind, shape,
         random_operand(shape.m, shape.k, 1.0, gemm, kind, kernels::Side::lhs, device),
         random_operand(shape.n, shape.k, 0.05, gemm, kind, kernels::Side::rhs, device)});
  };
  if (spec.shape) {
    tokens_ = spec.shape->m;
    add(spec.text(), recipe.gemms.fprop, kernels::GemmKind::fprop, *spec.shape);
    decisions_.push_back({spec.text(),
                          kernels::ModuleKind::linear,
                          {recipe.gemms.fprop, recipe.gemms.fprop, recipe.gemms.fprop},
                          recipe.gemms.fprop.quantized(),
                          "gemm level: one product under the recipe's fprop spec"});
    return;
  }
  tokens_ = options.micro_batch * options.seq_len;
  for (const LinearShape& linear : linear_shapes(model)) {
    if (!spec.part.empty() && linear.part != spec.part) continue;
    for (const auto& [kind, shape] : training_gemms(linear, tokens_)) {
      add(fmt::format("{}.{}", linear.part, kernels::to_string(kind)), recipe.gemms[kind], kind,
          shape);
    }
    decisions_.push_back({linear.part, kernels::ModuleKind::linear, recipe.gemms,
                          recipe.gemms.any_quantized(),
                          "gemm level: every product under the recipe's specs"});
  }
}

StepOutput GemmLevel::step(int64_t /*index*/) {
  for (const Product& p : products_)
    last_ = kernels::gemm_nt(p.a, p.b, p.spec, torch::kBFloat16);
  return {std::nullopt, std::nullopt, 0.0, tokens_};
}

bool GemmLevel::last_step_finite() const {
  return !last_.defined() || torch::isfinite(last_).all().item<bool>();
}

double GemmLevel::flops_per_step() const {
  double flops = 0.0;
  for (const Product& p : products_) {
    flops += 2.0 * static_cast<double>(p.shape.m) * static_cast<double>(p.shape.n) *
             static_cast<double>(p.shape.k);
  }
  return flops;
}

FlopCount GemmLevel::gemm_flops() const {
  FlopCount count;
  for (const Product& p : products_) {
    count.add(p.spec.lhs, 2.0 * static_cast<double>(p.shape.m) * static_cast<double>(p.shape.n) *
                              static_cast<double>(p.shape.k));
  }
  return count;
}

std::string GemmLevel::shape_description() const {
  std::string text;
  for (const Product& p : products_) {
    text += fmt::format("{}{} {}x{}x{} {}", text.empty() ? "" : "; ", p.name, p.shape.m, p.shape.n,
                        p.shape.k, kernels::describe(p.spec));
  }
  return text;
}

}  // namespace lpbench::workloads
