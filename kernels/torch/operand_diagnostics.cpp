#include "kernels/torch/operand_diagnostics.h"

#include <ATen/core/grad_mode.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>

#include "kernels/torch/quantize.h"

namespace lpbench::kernels {

namespace {

// Positions in the sums tensor: the first kSummed add up over repeated records, the rest take
// the maximum.
enum Sum : int64_t {
  kSignal,
  kNoise,
  kClipped,
  kFlushed,
  kNonzero,
  kCount,
  kFallbackBlocks,
  kFallbackSeen,  // blocks of a fallback operand (0 for any other)
  kAmax,
  kScale,
  kSums
};
constexpr int64_t kSummed = kAmax;

// |x / scale| beyond which the quantizer's clamp, not its rounding, sets the value: the format's
// largest value plus half its spacing there (INT8 127 + 0.5; E4M3 448 + 16; E5M2 57344 + 4096).
double clip_limit(NumberFormat format) {
  switch (format) {
    case NumberFormat::int8:
      return 127.5;
    case NumberFormat::fp8_e4m3:
      return 464.0;
    case NumberFormat::fp8_e5m2:
      return 61440.0;
    case NumberFormat::bf16:
      break;
  }
  TORCH_CHECK(false, "operand diagnostics: BF16 is not a quantized format");
}

// One value per element from one per block.
at::Tensor per_element(const at::Tensor& blocks, int64_t br, int64_t bc, int64_t rows,
                       int64_t cols) {
  return blocks.repeat_interleave(br, 0)
      .repeat_interleave(bc, 1)
      .narrow(0, 0, rows)
      .narrow(1, 0, cols);
}

std::atomic<bool>& switch_on() {
  static std::atomic<bool> on{false};
  return on;
}

std::mutex& sums_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, at::Tensor>& recorded() {
  static std::map<std::string, at::Tensor> map;
  return map;
}

}  // namespace

at::Tensor operand_sums(const at::Tensor& source, const Quantized& q, double outlier_ratio) {
  const at::NoGradGuard no_grad;
  TORCH_CHECK(source.dim() == 2 && source.sizes() == q.values.sizes(),
              "operand diagnostics: source ", source.sizes(), " against quantized ",
              q.values.sizes());
  const int64_t rows = q.rows();
  const int64_t cols = q.cols();
  const int64_t br = q.block_rows();
  const int64_t bc = q.block_cols();
  const at::Tensor x = source.to(at::kFloat);
  const at::Tensor scale = per_element(q.scales, br, bc, rows, cols);
  at::Tensor dq = q.values.to(at::kFloat) * scale;
  const auto f64 = x.options().dtype(at::kDouble);
  at::Tensor fallback_blocks = at::scalar_tensor(0.0, f64);
  at::Tensor fallback_seen = at::scalar_tensor(0.0, f64);
  if (outlier_ratio > 0.0) {
    // The rule and the residual of gemm.cpp's fallback product, over the whole matrix: its
    // blocks are 1×128 (one row each), so quantizing every row's residual gives the outlier
    // rows' figures bit for bit.
    const at::Tensor outliers = q.scales.gt(q.scales.flatten().median() * outlier_ratio);
    const at::Tensor mask = per_element(outliers, br, bc, rows, cols);
    const at::Tensor residual = at::where(mask, x - dq, at::zeros_like(x));
    const Quantized qr = kernels::quantize(residual, q.spec);
    dq = dq + at::where(mask, reference::dequantize(qr, at::kFloat), at::zeros_like(x));
    fallback_blocks = outliers.sum(at::kDouble);
    fallback_seen = at::scalar_tensor(static_cast<double>(q.scales.numel()), f64);
  }
  const at::Tensor nonzero = x.ne(0);
  const at::Tensor parts[kSums] = {
      x.square().sum(at::kDouble),
      (x - dq).square().sum(at::kDouble),
      x.abs().gt(scale * clip_limit(q.spec.format)).sum(at::kDouble),
      nonzero.logical_and(dq.eq(0)).sum(at::kDouble),
      nonzero.sum(at::kDouble),
      at::scalar_tensor(static_cast<double>(x.numel()), f64),
      fallback_blocks,
      fallback_seen,
      x.abs().max().to(at::kDouble),
      q.scales.flatten().median().to(at::kDouble),
  };
  return at::stack(parts);
}

OperandStats stats_from_sums(const at::Tensor& sums) {
  const at::Tensor cpu = sums.to(at::kCPU, at::kDouble).contiguous();
  TORCH_CHECK(cpu.numel() == kSums, "operand diagnostics: ", cpu.numel(), " sums, want ", kSums);
  const double* s = cpu.data_ptr<double>();
  OperandStats stats;
  stats.amax = s[kAmax];
  stats.scale = s[kScale];
  if (s[kNoise] > 0.0) {
    stats.sqnr_db = 10.0 * std::log10(s[kSignal] / s[kNoise]);
  } else {
    stats.sqnr_db = s[kSignal] > 0.0 ? std::numeric_limits<double>::infinity() : NAN;
  }
  stats.clipped = s[kCount] > 0.0 ? s[kClipped] / s[kCount] : 0.0;
  stats.flushed = s[kNonzero] > 0.0 ? s[kFlushed] / s[kNonzero] : 0.0;
  if (s[kFallbackSeen] > 0.0) stats.fallback = s[kFallbackBlocks] / s[kFallbackSeen];
  return stats;
}

OperandStats operand_stats(const at::Tensor& source, const Quantized& q, double outlier_ratio) {
  return stats_from_sums(operand_sums(source, q, outlier_ratio));
}

void set_operand_diagnostics(bool on) {
  switch_on().store(on);
}

bool operand_diagnostics() {
  return switch_on().load();
}

void record_operand(std::string_view module, GemmKind kind, std::string_view operand,
                    const at::Tensor& source, const Quantized& q, double outlier_ratio) {
  if (!operand_diagnostics()) return;
  const at::Tensor sums = operand_sums(source, q, outlier_ratio);
  const std::string key = std::string(module.empty() ? "?" : module) + "." +
                          std::string(to_string(kind)) + "." + std::string(operand);
  const std::lock_guard<std::mutex> lock(sums_mutex());
  auto [it, inserted] = recorded().emplace(key, sums);
  if (inserted) return;
  // Quantized again in the same step (a layer recomputed under activation checkpointing):
  // the counts add up, the maxima stay maxima.
  const at::Tensor& before = it->second;
  it->second = at::cat({before.narrow(0, 0, kSummed) + sums.narrow(0, 0, kSummed),
                        at::maximum(before.narrow(0, kSummed, kSums - kSummed),
                                    sums.narrow(0, kSummed, kSums - kSummed))});
}

std::map<std::string, OperandStats> take_operand_stats() {
  std::map<std::string, at::Tensor> taken;
  {
    const std::lock_guard<std::mutex> lock(sums_mutex());
    taken.swap(recorded());
  }
  std::map<std::string, OperandStats> stats;
  for (const auto& [key, sums] : taken)
    stats.emplace(key, stats_from_sums(sums));
  return stats;
}

}  // namespace lpbench::kernels
