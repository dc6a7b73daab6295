// The reference quantization (INT8, FP8; tensor, row, block) and scaled GEMM: the definitions
// every implementation is held to, tested against arithmetic done another way.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "kernels/reference/int8_gemm.h"
#include "kernels/reference/quantize.h"
#include "kernels/reference/scaled_gemm.h"

namespace lpbench::kernels::reference {
namespace {

constexpr NumberFormat kInt8 = NumberFormat::int8;
constexpr NumberFormat kE4M3 = NumberFormat::fp8_e4m3;
constexpr NumberFormat kE5M2 = NumberFormat::fp8_e5m2;

TEST(Quantize, TensorwiseScaleIsAmaxOverFmaxAndInt8IsSymmetric) {
  torch::manual_seed(3);
  const at::Tensor x = torch::randn({64, 128}).to(torch::kBFloat16);
  const float amax = x.abs().max().to(torch::kFloat).item<float>();
  for (NumberFormat format : {kInt8, kE4M3, kE5M2}) {
    const Quantized q = quantize(x, {format, 0, 0});
    ASSERT_EQ(q.scales.sizes(), (std::vector<int64_t>{1, 1}));
    EXPECT_FLOAT_EQ(q.scales.item<float>(), amax / static_cast<float>(format_max(format)));
    EXPECT_EQ(q.values.scalar_type(), storage_type(format));
    // The amax element maps to the format's largest magnitude.
    EXPECT_FLOAT_EQ(q.values.to(torch::kFloat).abs().max().item<float>(),
                    static_cast<float>(format_max(format)));
  }
  EXPECT_GE(quantize(x, {kInt8, 0, 0}).values.min().item<int>(), -127);  // never -128
}

// Delayed scaling's definition: by its own amax it is quantize(); by a smaller one the values
// beyond it saturate at the format's largest magnitude, and a NaN it cannot know of becomes 0.
TEST(Quantize, ByAGivenAmaxSaturatesBeyondItAndZeroesNaN) {
  torch::manual_seed(4);
  at::Tensor x = torch::randn({16, 32}).to(torch::kBFloat16);
  const float own = x.abs().max().to(torch::kFloat).item<float>();
  for (NumberFormat format : {kInt8, kE4M3, kE5M2}) {
    const Quantized dynamic = quantize(x, {format, 0, 0});
    const Quantized same = quantize_by_amax(x, format, own);
    EXPECT_TRUE(same.values.to(torch::kFloat).equal(dynamic.values.to(torch::kFloat)));
    EXPECT_TRUE(same.scales.equal(dynamic.scales));

    const Quantized stale = quantize_by_amax(x, format, own / 4);
    const float fmax = static_cast<float>(format_max(format));
    EXPECT_FLOAT_EQ(stale.scales.item<float>(), own / 4 / fmax);
    const at::Tensor v = stale.values.to(torch::kFloat);
    const at::Tensor beyond = x.to(torch::kFloat).abs() > own / 4;
    ASSERT_GT(beyond.sum().item<int64_t>(), 0);
    EXPECT_TRUE(v.abs().masked_select(beyond).eq(fmax).all().item<bool>());
    EXPECT_LE(v.abs().max().item<float>(), fmax);
  }
  x[3][5] = std::numeric_limits<float>::quiet_NaN();
  x[4][6] = std::numeric_limits<float>::infinity();
  const at::Tensor v = quantize_by_amax(x, kInt8, own).values;
  EXPECT_EQ(v[3][5].item<int>(), 0);
  EXPECT_EQ(v[4][6].item<int>(), 127);
}

TEST(Quantize, Int8RoundTripErrorIsWithinHalfAStepPerBlock) {
  for (auto [br, bc] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 0}, {1, 128}, {128, 128}, {32, 32}}) {
    torch::manual_seed(br * 1000 + bc);
    const at::Tensor x = torch::randn({200, 300}) * torch::linspace(0.1, 10.0, 300);
    const Quantized q = quantize(x, {kInt8, br, bc});
    const at::Tensor back = dequantize(q, at::kFloat);
    // Half a step of each element's own block, plus float32 roundings (under 1e-4 steps).
    const at::Tensor step = dequantize({torch::ones_like(q.values), q.scales, q.spec}, at::kFloat);
    EXPECT_TRUE(((back - x).abs() <= (0.5 + 1e-4) * step).all().item<bool>())
        << "blocks " << br << "x" << bc;
  }
}

TEST(Quantize, Fp8RoundTripErrorIsWithinTheFormatsRelativeStep) {
  torch::manual_seed(9);
  const at::Tensor x = torch::randn({64, 256});
  for (auto [format, mantissa_bits] : {std::pair{kE4M3, 3}, std::pair{kE5M2, 2}}) {
    const Quantized q = quantize(x, {format, 1, 128});
    const at::Tensor back = dequantize(q, at::kFloat);
    // Round to nearest: relative error at most 2^-(m+1) for normal values; small ones (below the
    // smallest normal, times the block scale) lose relative precision, so bound those absolutely.
    const double rel = std::ldexp(1.0, -(mantissa_bits + 1));
    const at::Tensor bound = torch::maximum(x.abs() * rel * 1.0001, torch::full_like(x, 1e-2));
    EXPECT_TRUE(((back - x).abs() <= bound).all().item<bool>()) << to_string(format);
  }
}

TEST(Quantize, ScalesHaveOneEntryPerBlockIncludingPartialEdgeBlocks) {
  const at::Tensor x = torch::randn({130, 300});
  EXPECT_EQ(quantize(x, {kInt8, 1, 0}).scales.sizes(), (std::vector<int64_t>{130, 1}));
  EXPECT_EQ(quantize(x, {kInt8, 1, 128}).scales.sizes(), (std::vector<int64_t>{130, 3}));
  EXPECT_EQ(quantize(x, {kInt8, 128, 128}).scales.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(quantize(x, {kInt8, 32, 32}).scales.sizes(), (std::vector<int64_t>{5, 10}));
  // Each block's scale is its own amax / 127.
  const Quantized q = quantize(x, {kInt8, 128, 128});
  const float edge = x.narrow(0, 128, 2).narrow(1, 256, 44).abs().max().item<float>();
  EXPECT_FLOAT_EQ(q.scales[1][2].item<float>(), edge / 127.0F);
}

TEST(Quantize, RoundsHalfToEven) {
  // amax 127 makes the INT8 scale 1, so x·(127/amax) is x itself.
  const at::Tensor x = torch::tensor({{127.0F, 0.5F, 1.5F, 2.5F, -0.5F, -1.5F, -2.5F}});
  const at::Tensor expected = torch::tensor({{127, 0, 2, 2, 0, -2, -2}}, torch::kChar);
  EXPECT_TRUE(torch::equal(quantize(x, {kInt8, 0, 0}).values, expected));
}

TEST(Quantize, ZeroBlocksGiveZerosAndUnitScales) {
  at::Tensor x = torch::randn({4, 256});
  x.narrow(1, 128, 128).zero_();
  const Quantized q = quantize(x.to(torch::kBFloat16), {kE4M3, 1, 128});
  EXPECT_TRUE((q.scales.select(1, 1) == 1.0F).all().item<bool>());
  EXPECT_EQ(q.values.narrow(1, 128, 128).to(torch::kFloat).abs().max().item<float>(), 0.0F);
}

// A block whose amax is so small that fmax / amax overflows (below about 1e-36) is quantized as a
// zero block: with an infinite inverse scale every one of its values would become ±fmax.
TEST(Quantize, BlocksTooSmallForAFiniteInverseScaleGiveZerosAndUnitScales) {
  for (const QuantSpec& spec : {QuantSpec{kE4M3, 1, 128}, QuantSpec{kInt8, 1, 128}}) {
    at::Tensor x = torch::randn({4, 256});
    x.narrow(1, 128, 128).mul_(1e-38F);
    const Quantized q = quantize(x, spec);
    EXPECT_TRUE((q.scales.select(1, 1) == 1.0F).all().item<bool>());
    EXPECT_EQ(q.values.narrow(1, 128, 128).to(torch::kFloat).abs().max().item<float>(), 0.0F);
    // The other block is as before: its largest value at the format's largest.
    EXPECT_GT(q.values.narrow(1, 0, 128).to(torch::kFloat).abs().max().item<float>(), 100.0F);
    const at::Tensor back = dequantize(q, at::kFloat);
    EXPECT_LT((back.narrow(1, 128, 128) - x.narrow(1, 128, 128)).abs().max().item<float>(), 1e-36F);
  }
}

TEST(Quantize, NonFiniteInputPropagatesToItsBlockOnly) {
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    at::Tensor x = torch::randn({8, 256});
    x[3][200] = bad;  // row 3, second 1×128 block
    const Quantized q = quantize(x, {kInt8, 1, 128});
    EXPECT_FALSE(std::isfinite(q.scales[3][1].item<float>())) << bad;
    EXPECT_TRUE(std::isfinite(q.scales[3][0].item<float>())) << bad;
    EXPECT_EQ(q.values[3].narrow(0, 128, 128).abs().max().item<int>(), 0) << bad;
    // Whatever is computed from that block is non-finite; the other rows are not.
    const Quantized w = quantize(torch::randn({16, 256}), {kInt8, 128, 128});
    const at::Tensor y = scaled_gemm(q, w, at::kFloat);
    EXPECT_FALSE(torch::isfinite(y[3]).all().item<bool>()) << bad;
    EXPECT_TRUE(torch::isfinite(y[2]).all().item<bool>()) << bad;
  }
}

TEST(Quantize, TransposeOfAQuantizedMatrixIsQuantizingTheTranspose) {
  const at::Tensor x = torch::randn({256, 384});
  for (auto [br, bc] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {128, 128}, {32, 32}}) {
    const Quantized direct = quantize(x.t(), {kInt8, bc, br});
    const Quantized moved = transpose(quantize(x, {kInt8, br, bc}));
    EXPECT_TRUE(torch::equal(direct.values, moved.values));
    EXPECT_TRUE(torch::equal(direct.scales, moved.scales));
  }
}

// A dequantize-then-multiply twin of the scaled GEMM, in float64: independent of its K blocking.
at::Tensor dequantized_product(const Quantized& a, const Quantized& b) {
  return at::mm(dequantize(a, at::kDouble), dequantize(b, at::kDouble).t());
}

// Stochastic rounding: each value goes to one of its two neighbouring levels, integers stay put,
// and the mean of many roundings is the value (unbiased), where rounding to nearest is biased.
TEST(Quantize, StochasticRoundingIsUnbiasedAndStaysBetweenNeighbours) {
  constexpr int64_t kCount = 200000;
  const QuantSpec sr{kInt8, 0, 0, Rounding::stochastic};
  for (const double level : {0.1, 0.5, 0.9, -0.3, 3.25, -126.75}) {
    // One element sets amax = 127 (inverse scale 1); the rest sit at `level`.
    at::Tensor x = torch::full({1, kCount}, level, torch::kFloat);
    x.index_put_({0, 0}, 127.0);
    const at::Tensor q = quantize(x, sr, 42).values.to(torch::kDouble).narrow(1, 1, kCount - 1);
    const double lo = std::floor(level);
    EXPECT_TRUE(((q == lo) | (q == lo + 1)).all().item<bool>()) << level;
    // p = frac(level): the mean's standard error is sqrt(p (1 - p) / n) ≈ 0.0011 at most.
    EXPECT_NEAR(q.mean().item<double>(), level, 0.006) << level;
    EXPECT_NEAR(quantize(x, {kInt8, 0, 0})
                    .values.to(torch::kDouble)
                    .narrow(1, 1, kCount - 1)
                    .mean()
                    .item<double>(),
                std::nearbyint(level), 1e-12)
        << "rounding to nearest";
  }
  // The mean over many seeds of one element is the value too.
  at::Tensor x = torch::tensor({{127.0F, 0.3F, -5.7F}});
  at::Tensor sum = torch::zeros({1, 3}, torch::kDouble);
  constexpr int kSeeds = 20000;
  for (uint64_t seed = 0; seed < kSeeds; ++seed)
    sum += quantize(x, sr, seed).values.to(torch::kDouble);
  EXPECT_NEAR(sum[0][1].item<double>() / kSeeds, 0.3, 0.015);
  EXPECT_NEAR(sum[0][2].item<double>() / kSeeds, -5.7, 0.015);
  // Integers stay integers; the largest magnitude stays 127 (never 128 or -128).
  const at::Tensor ints = torch::tensor({{127.0F, -127.0F, 0.0F, 5.0F, -64.0F}});
  EXPECT_TRUE(torch::equal(quantize(ints, sr, 9).values, ints.to(torch::kChar)));
}

TEST(Quantize, StochasticRoundingReplaysFromItsSeedAndHandlesSpecialValues) {
  torch::manual_seed(12);
  at::Tensor x = torch::randn({130, 260});
  x.narrow(0, 0, 1).zero_();
  x.index_put_({5, 7}, std::numeric_limits<float>::quiet_NaN());
  const QuantSpec sr{kInt8, 1, 128, Rounding::stochastic};
  const Quantized a = quantize(x, sr, 5);
  EXPECT_TRUE(torch::equal(a.values, quantize(x, sr, 5).values));
  EXPECT_FALSE(torch::equal(a.values, quantize(x, sr, 6).values));
  // The scales are rounding to nearest's (the NaN block's scale is NaN under both).
  EXPECT_TRUE(torch::allclose(a.scales, quantize(x, {kInt8, 1, 128}).scales, 0.0, 0.0, true));
  EXPECT_EQ(a.values.narrow(0, 0, 1).abs().max().item<int>(), 0);  // zeros stay zero
  EXPECT_EQ(a.values.narrow(0, 5, 1).narrow(1, 0, 128).abs().max().item<int>(), 0);  // NaN block
  // Within one level of rounding to nearest everywhere.
  const at::Tensor nearest = quantize(x, {kInt8, 1, 128}).values.to(torch::kInt);
  EXPECT_LE((a.values.to(torch::kInt) - nearest).abs().max().item<int>(), 1);
  EXPECT_THROW(quantize(x, {kE4M3, 1, 128, Rounding::stochastic}, 1), c10::Error);
}

TEST(ScaledGemm, Int8TensorwiseIsTheExactProductScaledOnce) {
  torch::manual_seed(1);
  const Quantized a = quantize(torch::randn({33, 160}), {kInt8, 0, 0});
  const Quantized b = quantize(torch::randn({17, 160}), {kInt8, 0, 0});
  const at::Tensor acc = int8_gemm_int64(a.values, b.values).to(at::kFloat);
  const at::Tensor expected = acc * (a.scales * b.scales);
  EXPECT_TRUE(torch::equal(scaled_gemm(a, b, at::kFloat), expected));
}

TEST(ScaledGemm, EveryGranularityAgreesWithTheDequantizedProduct) {
  torch::manual_seed(2);
  const at::Tensor x = torch::randn({96, 384});
  const at::Tensor w = torch::randn({80, 384}) * 0.05;
  struct Case {
    NumberFormat fa, fb;
    QuantSpec sa, sb;
  };
  for (const Case& c : {Case{kInt8, kInt8, {kInt8, 0, 0}, {kInt8, 0, 0}},
                        Case{kInt8, kInt8, {kInt8, 1, 0}, {kInt8, 1, 0}},
                        Case{kInt8, kInt8, {kInt8, 1, 128}, {kInt8, 128, 128}},
                        Case{kInt8, kInt8, {kInt8, 1, 128}, {kInt8, 1, 128}},
                        Case{kE5M2, kE4M3, {kE5M2, 1, 128}, {kE4M3, 128, 128}},
                        Case{kE4M3, kE4M3, {kE4M3, 1, 0}, {kE4M3, 1, 0}}}) {
    const Quantized a = quantize(x, c.sa);
    const Quantized b = quantize(w, c.sb);
    const at::Tensor ours = scaled_gemm(a, b, at::kFloat).to(at::kDouble);
    const at::Tensor twin = dequantized_product(a, b);
    // Only the FP32 roundings of per-block partial sums and of their sum differ.
    EXPECT_LT(((ours - twin).norm() / twin.norm()).item<double>(), 1e-6)
        << to_string(c.fa) << " blocks " << c.sa.block_rows << "x" << c.sa.block_cols;
  }
}

TEST(ScaledGemm, BiasIsAddedBeforeTheOneRounding) {
  const Quantized a = quantize(torch::randn({8, 64}), {kInt8, 1, 0});
  const Quantized b = quantize(torch::randn({4, 64}), {kInt8, 1, 0});
  const at::Tensor bias = torch::tensor({1.0F, -2.0F, 0.5F, 3.0F});
  EXPECT_TRUE(torch::equal(scaled_gemm(a, b, at::kBFloat16, bias),
                           (scaled_gemm(a, b, at::kFloat) + bias).to(at::kBFloat16)));
}

TEST(ScaledGemm, RefusesMismatchedOperands) {
  const Quantized a = quantize(torch::randn({8, 256}), {kInt8, 1, 128});
  EXPECT_THROW(scaled_gemm(a, quantize(torch::randn({8, 128}), {kInt8, 1, 128}), at::kFloat),
               c10::Error);
  EXPECT_THROW(scaled_gemm(a, quantize(torch::randn({8, 256}), {kInt8, 1, 64}), at::kFloat),
               c10::Error);
  EXPECT_THROW(scaled_gemm(a, quantize(torch::randn({8, 256}), {kE4M3, 1, 128}), at::kFloat),
               c10::Error);
}

}  // namespace
}  // namespace lpbench::kernels::reference
