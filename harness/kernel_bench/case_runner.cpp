#include "harness/kernel_bench/case_runner.h"

#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "base/errors.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/scaled_gemm.h"

#ifdef LPBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace lpbench::kernel_bench {

namespace {

using kernels::NumberFormat;
using kernels::Side;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// X and Xᵀ from one call, as a training step asks for them: the row pair for X per row (Xᵀ per
// row of Xᵀ), otherwise the quantization of X and its exact transpose.
std::pair<kernels::Quantized, kernels::Quantized> quantize_both(const at::Tensor& x,
                                                                const kernels::QuantSpec& q) {
  if (kernels::is_rowwise(q)) return kernels::quantize_rowwise_pair(x, q);
  return kernels::quantize_with_transpose(x, q);
}

bool is_fp8(NumberFormat format) {
  return format == NumberFormat::fp8_e4m3 || format == NumberFormat::fp8_e5m2;
}

// The operands' seed: the shape's, not the recipe's, so every recipe of a shape multiplies the
// same values.
uint64_t shape_seed(const KernelCase& c, uint64_t seed, int64_t set) {
  const std::string key =
      fmt::format("{}/{}/{}/{}x{}x{}/{}", c.model, c.kind ? kernels::to_string(*c.kind) : "q",
                  c.part, c.m, c.n, c.k, set);
  return seed ^ (std::hash<std::string>{}(key)&0x7fffffffffffULL);
}

at::Tensor draw(int64_t rows, int64_t cols, double scale, const torch::Device& device) {
  return (torch::randn({rows, cols}, torch::dtype(torch::kFloat).device(device)) * scale)
      .to(torch::kBFloat16);
}

}  // namespace

DeviceInfo device_info(const torch::Device& device) {
  DeviceInfo info;
  info.device = device;
#ifdef LPBENCH_TORCH_CUDA
  if (device.is_cuda()) {
    const auto* props = at::cuda::getDeviceProperties(device.index());
    info.gpu_name = props->name;
    info.l2_bytes = props->l2CacheSize;
    info.memory_bytes = static_cast<double>(props->totalGlobalMem);
    info.fp8 = props->major * 10 + props->minor >= 89;
    if (!info.fp8) {
      info.fp8_missing =
          fmt::format("{} is compute capability {}.{}", props->name, props->major, props->minor);
    }
    return info;
  }
#endif
  info.memory_bytes =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  info.fp8_missing = "this run is on the CPU, where only the reference emulation exists";
  return info;
}

int64_t buffer_sets_for(const KernelCase& c, const DeviceInfo& device, int64_t forced) {
  if (forced > 0) return forced;
  if (!device.l2_bytes) return kCpuBufferSets;
  const double needed = 2.0 * static_cast<double>(*device.l2_bytes) / c.set_bytes();
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(needed)), 2, kMaxBufferSets);
}

std::optional<std::string> unsupported_reason(const KernelCase& c, const DeviceInfo& device,
                                              int64_t sets) {
  const bool fp8 = c.op == Op::quantize ? is_fp8(c.quant.format) : is_fp8(c.spec.lhs);
  if (fp8 && !device.fp8) {
    return fmt::format("{} needs FP8 tensor cores (a GPU of compute capability 8.9 or newer); {}",
                       c.recipe, device.fp8_missing);
  }
  // The sets, the product and the validation's FP32 copy of the right operand, with headroom.
  const double out = 2.0 * static_cast<double>(c.m) * static_cast<double>(c.n);
  const double rhs32 =
      4.0 * static_cast<double>(c.n) * static_cast<double>(std::max<int64_t>(c.k, 1));
  const double need = c.set_bytes() * static_cast<double>(sets) + 2.0 * out + rhs32;
  if (need > 0.85 * device.memory_bytes) {
    return fmt::format("needs about {:.1f} GiB with {} buffer sets; the device has {:.1f} GiB",
                       need / kGiB, sets, device.memory_bytes / kGiB);
  }
  return std::nullopt;
}

PreparedCase::PreparedCase(const KernelCase& c, const DeviceInfo& device, int64_t sets,
                           uint64_t seed)
    : case_(c), device_(device.device) {
  const torch::NoGradGuard no_grad;
  for (int64_t s = 0; s < sets; ++s) {
    torch::manual_seed(shape_seed(c, seed, s));
    Set set;
    if (c.op == Op::quantize) {
      set.lhs_source = draw(c.m, c.n, 1.0, device_);
      sets_.push_back(std::move(set));
      continue;
    }
    const kernels::GemmKind kind = *c.kind;
    // Activations and gradients near unit scale, weights small, as in the gemm level.
    set.lhs_source = c.lhs_transposed ? draw(c.k, c.m, 1.0, device_) : draw(c.m, c.k, 1.0, device_);
    set.rhs_source =
        c.rhs_transposed ? draw(c.k, c.n, 0.05, device_) : draw(c.n, c.k, 0.05, device_);
    if (c.variant != Variant::with_quantization) {
      set.lhs = kernels::prepare_operand(set.lhs_source, c.spec, kind, Side::lhs, c.lhs_transposed);
      set.rhs = kernels::prepare_operand(set.rhs_source, c.spec, kind, Side::rhs, c.rhs_transposed);
      // Pre-quantized sets hold only what the product reads (int8-fallback's left operand keeps
      // its BF16 values inside the operand).
      if (c.spec.quantized()) set.lhs_source = set.rhs_source = at::Tensor();
    }
    sets_.push_back(std::move(set));
  }

  if (c.op == Op::quantize) {
    const at::Tensor& x = sets_[0].lhs_source;
    if (c.with_transpose) {
      const auto [got, got_t] = quantize_both(x, c.quant);
      check_ = check_quantized(got, kernels::reference::quantize(x, c.quant));
      if (check_.ok) check_ = check_quantized(got_t, kernels::reference::quantize(x.t(), c.quant));
    } else {
      check_ =
          check_quantized(kernels::quantize(x, c.quant), kernels::reference::quantize(x, c.quant));
    }
#ifdef LPBENCH_CUDA_GLUE
    backend_ = device_.is_cuda() ? "lpbench-quantize" : "cpu-reference";
#else
    backend_ = device_.is_cuda() ? "reference-on-gpu" : "cpu-reference";
#endif
    return;
  }
  kernels::GemmOperand lhs, rhs;
  const at::Tensor result = run_once(sets_[0], &lhs, &rhs);
  check_ = check_product(result, lhs, rhs, c.spec);
  if (c.spec.quantized()) {
    backend_ = kernels::scaled_gemm_backend(*lhs.q, *rhs.q, device_);
    // The wgmma kernel's config depends on the shape: recorded with the case's result.
    if (backend_ == "lpbench-wgmma") {
      backend_ += " (" + kernels::wgmma_config_name(*lhs.q, *rhs.q) + ")";
    }
  } else {
    backend_ = device_.is_cuda() ? "cublas-bf16" : "cpu-aten-mm";
  }
}

at::Tensor PreparedCase::run_once(const Set& set, kernels::GemmOperand* lhs_used,
                                  kernels::GemmOperand* rhs_used) const {
  const KernelCase& c = case_;
  if (c.op == Op::quantize) {
    if (c.with_transpose) return quantize_both(set.lhs_source, c.quant).second.values;
    return kernels::quantize(set.lhs_source, c.quant).values;
  }
  const kernels::GemmKind kind = *c.kind;
  if (c.variant == Variant::with_quantization) {
    const kernels::GemmOperand lhs =
        kernels::prepare_operand(set.lhs_source, c.spec, kind, Side::lhs, c.lhs_transposed);
    const kernels::GemmOperand rhs =
        kernels::prepare_operand(set.rhs_source, c.spec, kind, Side::rhs, c.rhs_transposed);
    if (lhs_used) *lhs_used = lhs;
    if (rhs_used) *rhs_used = rhs;
    return kernels::gemm_nt(lhs, rhs, c.spec, at::kBFloat16, kind);
  }
  if (lhs_used) *lhs_used = set.lhs;
  if (rhs_used) *rhs_used = set.rhs;
  return kernels::gemm_nt(set.lhs, set.rhs, c.spec, at::kBFloat16, kind);
}

void PreparedCase::run_pass() {
  const torch::NoGradGuard no_grad;
  for (const Set& set : sets_)
    (void)run_once(set);
}

}  // namespace lpbench::kernel_bench
