#pragma once

#include <ATen/ATen.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/recipe.h"
#include "kernels/reference/quantize.h"

// Quantization diagnostics: how faithfully the quantized operands of the GEMMs represent their
// sources. The quantized linear layer records each quantized operand while the switch is on (the
// runner turns it on for the sampled steps only, so other steps pay nothing and never wait on the
// device); a workload's caller takes the figures after the step. Process-wide and locked, like
// gemm_stats.h: backward runs on autograd's own threads.
namespace lpbench::kernels {

using reference::Quantized;

// The figures of one quantized operand (over every time it was quantized since the last take).
struct OperandStats {
  double amax = 0.0;   // max |x|
  double scale = 0.0;  // the median of its block scales (its one scale when tensorwise)
  double sqnr_db = 0.0;  // 10·log10(Σx² / Σ(x − dq(q(x)))²); +inf where the quantization is exact
  double clipped = 0.0;  // share of the values beyond the format's range at their block's scale
  double flushed = 0.0;  // share of the nonzero values whose dequantized value is 0
  // int8-fallback's left operand: the share of its blocks that fell back to the residual
  // product. Its SQNR and flush share are those of what the GEMMs compute with: the quantized
  // value plus, in those blocks, the quantized residual.
  std::optional<double> fallback;
};

// The sums the figures come from, as a tensor on the operand's device (no host sync).
// `source` is the operand in q's coordinates ([rows, K]); outlier_ratio > 0 marks int8-fallback's
// left operand (blocks whose scale exceeds outlier_ratio × the median scale fall back).
at::Tensor operand_sums(const at::Tensor& source, const Quantized& q, double outlier_ratio = 0.0);
OperandStats stats_from_sums(const at::Tensor& sums);
// Both at once (waits on the device).
OperandStats operand_stats(const at::Tensor& source, const Quantized& q,
                           double outlier_ratio = 0.0);

// The sampling switch.
void set_operand_diagnostics(bool on);
bool operand_diagnostics();

// Records one operand when the switch is on; does nothing otherwise. `operand` is "x", "w" or
// "dy"; `source` is in q's coordinates.
void record_operand(std::string_view module, GemmKind kind, std::string_view operand,
                    const at::Tensor& source, const Quantized& q, double outlier_ratio = 0.0);

// "<module>.<gemm>.<operand>" → its figures since the last call; resets them. Waits on the device.
std::map<std::string, OperandStats> take_operand_stats();

}  // namespace lpbench::kernels
