// Quantization diagnostics on tensors whose figures are known by hand: SQNR of a worked INT8
// quantization, clipped and flushed shares on constructed tensors, int8-fallback's blocks, and
// what the quantized linear layer records while the switch is on.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <set>

#include "kernels/recipe.h"
#include "kernels/reference/quantize.h"
#include "kernels/torch/operand_diagnostics.h"
#include "kernels/torch/quantized_linear.h"

namespace lpbench::kernels {
namespace {

using reference::QuantSpec;

at::Tensor row(std::vector<float> values) {
  return torch::tensor(values).view({1, -1});
}

// Switches the diagnostics on for one test and leaves nothing recorded behind.
struct DiagnosticsOn {
  DiagnosticsOn() {
    take_operand_stats();
    set_operand_diagnostics(true);
  }
  ~DiagnosticsOn() {
    set_operand_diagnostics(false);
    take_operand_stats();
  }
};

TEST(OperandDiagnostics, SqnrOfAWorkedTensorwiseInt8Quantization) {
  // amax 1 → scale 1/127; x·127 = 127, 31.75, -63.5, 7.9375 round (half to even) to
  // 127, 32, -64, 8.
  const at::Tensor x = row({1.0F, 0.25F, -0.5F, 0.0625F});
  const Quantized q = reference::quantize(x, {NumberFormat::int8, 0, 0});
  ASSERT_EQ(q.values.to(at::kInt).flatten()[2].item<int>(), -64);

  const double signal = 1.0 + 0.0625 + 0.25 + 0.00390625;
  const double e1 = 0.25 - 32.0 / 127.0;
  const double e2 = -0.5 + 64.0 / 127.0;
  const double e3 = 0.0625 - 8.0 / 127.0;
  const double expected_db = 10.0 * std::log10(signal / (e1 * e1 + e2 * e2 + e3 * e3));

  const OperandStats s = operand_stats(x, q);
  EXPECT_NEAR(s.sqnr_db, expected_db, 1e-3);
  EXPECT_FLOAT_EQ(s.amax, 1.0);
  EXPECT_FLOAT_EQ(s.scale, 1.0 / 127.0);
  EXPECT_EQ(s.clipped, 0.0);
  EXPECT_EQ(s.flushed, 0.0);
  EXPECT_FALSE(s.fallback.has_value());
}

TEST(OperandDiagnostics, AnExactQuantizationHasInfiniteSqnr) {
  const at::Tensor x = row({127.0F, -3.0F, 0.0F, 5.0F});  // amax 127: scale 1, all integers
  const OperandStats s = operand_stats(x, reference::quantize(x, {NumberFormat::int8, 0, 0}));
  EXPECT_TRUE(std::isinf(s.sqnr_db) && s.sqnr_db > 0);
  EXPECT_EQ(s.flushed, 0.0);  // the zero is not a nonzero flushed
}

TEST(OperandDiagnostics, ValuesBeyondTheRangeAtTheirScaleAreClipped) {
  // A scale set for amax 1 (as a stale or delayed scale would be) against values up to 2: the
  // quantizer clamps 2.0 and 1.5 to 127; 1.0039 (127.5 / 127) is the last value rounding alone
  // takes to 127.
  const at::Tensor x = row({2.0F, 1.5F, 1.0F, -0.5F});
  Quantized q{torch::tensor({127, 127, 127, -64}, torch::kChar).view({1, 4}),
              torch::full({1, 1}, 1.0F / 127.0F),
              {NumberFormat::int8, 0, 0}};
  EXPECT_DOUBLE_EQ(operand_stats(x, q).clipped, 0.5);

  // FP8 E4M3 at scale 1: beyond 448 plus half its spacing (464) is clipped; 450 rounds to 448.
  const at::Tensor f = row({500.0F, 450.0F, 1.0F, 2.0F});
  Quantized fq{f.clamp(-448, 448).to(at::kFloat8_e4m3fn),
               torch::ones({1, 1}),
               {NumberFormat::fp8_e4m3, 0, 0}};
  EXPECT_DOUBLE_EQ(operand_stats(f, fq).clipped, 0.25);
}

TEST(OperandDiagnostics, OneHugeOutlierFlushesSmallValuesTensorwiseButNotRowwise) {
  // Four rows of 128 small nonzero values; one value of row 0 is 1000. Tensorwise the scale is
  // 1000 / 127 ≈ 7.9, so every value under half of it (all but the outlier) becomes 0.
  // Rowwise only row 0 shares the outlier's scale.
  at::Tensor x = (torch::arange(1, 4 * 128 + 1, torch::kFloat) % 7 + 1).view({4, 128}) * 0.01F;
  x[0][5] = 1000.0F;
  const double nonzero = 4 * 128;

  const OperandStats tensor = operand_stats(x, reference::quantize(x, {NumberFormat::int8, 0, 0}));
  EXPECT_DOUBLE_EQ(tensor.flushed, (nonzero - 1) / nonzero);
  EXPECT_FLOAT_EQ(tensor.amax, 1000.0);

  const OperandStats rowwise = operand_stats(x, reference::quantize(x, {NumberFormat::int8, 1, 0}));
  EXPECT_DOUBLE_EQ(rowwise.flushed, 127.0 / nonzero);
  // Rows 1–3 have scales 0.07 / 127; their median is the median of the four row scales.
  EXPECT_FLOAT_EQ(rowwise.scale, 0.07F / 127.0F);
  EXPECT_GT(rowwise.sqnr_db, tensor.sqnr_db);
}

TEST(OperandDiagnostics, FallbackBlocksAreCountedAndTheirResidualCounts) {
  // [2, 512] in 1×128 blocks: eight blocks of values near 1, one with an outlier of 50.
  torch::manual_seed(3);
  at::Tensor x = torch::rand({2, 512}) + 0.5;
  x[1][300] = 50.0F;
  const Quantized q = reference::quantize(x, {NumberFormat::int8, 1, 128});
  const OperandStats plain = operand_stats(x, q);
  const OperandStats fallback = operand_stats(x, q, /*outlier_ratio=*/4.0);
  ASSERT_TRUE(fallback.fallback.has_value());
  EXPECT_DOUBLE_EQ(*fallback.fallback, 1.0 / 8.0);
  EXPECT_FALSE(plain.fallback.has_value());
  // The outlier block's values, coarse at scale 50/127, gain about 16 bits of precision back.
  EXPECT_GT(fallback.sqnr_db, plain.sqnr_db + 10.0);
}

TEST(OperandDiagnostics, NothingIsRecordedWhileTheSwitchIsOff) {
  take_operand_stats();
  const at::Tensor x = row({1.0F, 2.0F});
  record_operand("m", GemmKind::fprop, "x", x, reference::quantize(x, {NumberFormat::int8, 0, 0}));
  EXPECT_TRUE(take_operand_stats().empty());
}

std::set<std::string> keys(const std::map<std::string, OperandStats>& stats) {
  std::set<std::string> out;
  for (const auto& [key, s] : stats)
    out.insert(key);
  return out;
}

TEST(OperandDiagnostics, TheQuantizedLinearRecordsEachQuantizedOperandOfItsGemms) {
  torch::manual_seed(0);
  const at::Tensor x0 = torch::randn({2, 16, 256}).to(torch::kBFloat16);
  const at::Tensor w0 = (torch::randn({192, 256}) * 0.05).to(torch::kBFloat16);
  const at::Tensor g = torch::randn({2, 16, 192}).to(torch::kBFloat16);
  auto train = [&](const std::string& recipe) {
    const DiagnosticsOn on;
    at::Tensor x = x0.clone().requires_grad_(true);
    at::Tensor w = w0.clone().requires_grad_(true);
    quantized_linear(x, w, parse_recipe(recipe).gemms, "layer").backward(g);
    return take_operand_stats();
  };

  const auto all = train("int8-row");
  EXPECT_EQ(keys(all),
            (std::set<std::string>{"layer.fprop.x", "layer.fprop.w", "layer.dgrad.w",
                                   "layer.dgrad.dy", "layer.wgrad.x", "layer.wgrad.dy"}));
  // The figures are those of the operand as the GEMM quantized it.
  const at::Tensor x2 = x0.reshape({-1, 256});
  const OperandStats direct =
      operand_stats(x2, reference::quantize(x2, {NumberFormat::int8, 1, 0}));
  EXPECT_DOUBLE_EQ(all.at("layer.fprop.x").sqnr_db, direct.sqnr_db);
  EXPECT_DOUBLE_EQ(all.at("layer.fprop.x").amax, direct.amax);
  for (const auto& [key, s] : all) {
    EXPECT_GT(s.sqnr_db, 20.0) << key;
    EXPECT_LT(s.sqnr_db, 60.0) << key;
  }

  EXPECT_EQ(
      keys(train("int8-row:wgrad=bf16")),
      (std::set<std::string>{"layer.fprop.x", "layer.fprop.w", "layer.dgrad.w", "layer.dgrad.dy"}));
  EXPECT_TRUE(train("bf16").empty());
  const auto fallback = train("int8-fallback");
  ASSERT_TRUE(fallback.at("layer.fprop.x").fallback.has_value());
  EXPECT_FALSE(fallback.at("layer.fprop.w").fallback.has_value());
  EXPECT_TRUE(fallback.at("layer.dgrad.dy").fallback.has_value());
}

}  // namespace
}  // namespace lpbench::kernels
