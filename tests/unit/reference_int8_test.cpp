// The CPU reference of INT8 quantization and the INT8 GEMM: the definition every other
// implementation is held to, so its own tests compare with arithmetic that cannot round.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "kernels/reference/int8_gemm.h"
#include "kernels/reference/int8_quantize.h"

namespace lpbench::kernels::reference {
namespace {

at::Tensor random_int8(int64_t rows, int64_t cols, int64_t seed) {
  torch::manual_seed(seed);
  return torch::randint(-127, 128, {rows, cols}, torch::kChar);
}

void expect_bit_exact(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor fast = int8_gemm(a, b);
  const at::Tensor oracle = int8_gemm_int64(a, b);
  ASSERT_EQ(fast.scalar_type(), at::kInt);
  ASSERT_EQ(fast.sizes(), oracle.sizes());
  EXPECT_TRUE(torch::equal(fast.to(at::kLong), oracle))
      << "max |diff| " << (fast.to(at::kLong) - oracle).abs().max().item<int64_t>();
}

// Shapes around the float32/float64 switch, edge sizes, and a K past both.
class Int8GemmShapes : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(Int8GemmShapes, RandomInputsMatchInt64Oracle) {
  const auto [m, n, k] = GetParam();
  expect_bit_exact(random_int8(m, k, m * 7 + k), random_int8(n, k, n * 13 + k + 1));
}

TEST_P(Int8GemmShapes, ExtremeInputsMatchInt64Oracle) {
  const auto [m, n, k] = GetParam();
  // All +127 against all -127 (and +127): every partial sum at its largest magnitude.
  const at::Tensor plus = torch::full({m, k}, 127, torch::kChar);
  const at::Tensor minus = torch::full({n, k}, -127, torch::kChar);
  expect_bit_exact(plus, minus);
  expect_bit_exact(plus, torch::full({n, k}, 127, torch::kChar));
  const at::Tensor zeros = int8_gemm(torch::zeros({m, k}, torch::kChar), minus);
  EXPECT_EQ(zeros.abs().max().item<int>(), 0);
}

INSTANTIATE_TEST_SUITE_P(EdgeAndBoundary, Int8GemmShapes,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(1, 17, 33),
                                           std::make_tuple(17, 1, 64), std::make_tuple(64, 96, 256),
                                           std::make_tuple(8, 8, kInt8GemmFp32ExactMaxK),
                                           std::make_tuple(8, 8, kInt8GemmFp32ExactMaxK + 1),
                                           std::make_tuple(4, 4, 20000)));

TEST(Int8Gemm, ExtremeSumAtTheFloat32BoundaryIsExact) {
  // 1040·127² = 16774160 < 2²⁴ and 1041·127² = 16790289 > 2²⁴: the second would round in float32.
  for (int64_t k : {kInt8GemmFp32ExactMaxK, kInt8GemmFp32ExactMaxK + 1}) {
    const at::Tensor a = torch::full({2, k}, 127, torch::kChar);
    EXPECT_EQ(int8_gemm(a, a)[0][0].item<int>(), static_cast<int>(k * 127 * 127)) << "K=" << k;
  }
}

TEST(Int8Gemm, RejectsMismatchedOrOverflowingShapes) {
  EXPECT_THROW(int8_gemm(random_int8(4, 8, 1), random_int8(4, 9, 2)), c10::Error);
  EXPECT_THROW(int8_gemm(torch::zeros({2, 4}), torch::zeros({2, 4})), c10::Error);
  EXPECT_THROW(int8_gemm(torch::zeros({1, kInt8GemmMaxK + 1}, torch::kChar),
                         torch::zeros({1, kInt8GemmMaxK + 1}, torch::kChar)),
               c10::Error);
}

TEST(QuantizeTensorwise, ScaleIsAmaxOver127AndValuesAreSymmetric) {
  torch::manual_seed(3);
  const at::Tensor x = torch::randn({64, 128}).to(torch::kBFloat16);
  const Int8Tensor q = quantize_int8_tensorwise(x);
  const float amax = x.abs().max().to(torch::kFloat).item<float>();
  EXPECT_FLOAT_EQ(q.scale.item<float>(), amax / 127.0F);
  EXPECT_EQ(q.values.scalar_type(), at::kChar);
  EXPECT_EQ(q.values.max().item<int>(), 127);   // the amax element maps to ±127
  EXPECT_GE(q.values.min().item<int>(), -127);  // never -128
}

TEST(QuantizeTensorwise, RoundTripErrorIsWithinHalfAStep) {
  for (int64_t seed : {0, 1, 2}) {
    torch::manual_seed(seed);
    const at::Tensor x = torch::randn({256, 96}) * (seed + 1) * 10;
    const Int8Tensor q = quantize_int8_tensorwise(x);
    const at::Tensor back = dequantize(q, at::kFloat);
    const double step = q.scale.item<double>();
    // Half a step, plus float32 roundings: of x·(127/amax) (≤ 127·2⁻²⁴ steps), of the scale
    // (≤ 127·2⁻²³ steps) and of q·scale (≤ 127·2⁻²⁴ steps); together under 1e-4 steps.
    const double bound = (0.5 + 1e-4) * step;
    EXPECT_LE((back - x).abs().max().item<double>(), bound) << "seed " << seed;
  }
}

TEST(QuantizeTensorwise, RoundsHalfToEven) {
  // amax 127 makes the scale 1, so x·(127/amax) is x itself: 0.5 → 0, 1.5 → 2, 2.5 → 2, -0.5 → 0.
  const at::Tensor x = torch::tensor({127.0F, 0.5F, 1.5F, 2.5F, -0.5F, -1.5F, -2.5F});
  const at::Tensor expected = torch::tensor({127, 0, 2, 2, 0, -2, -2}, torch::kChar);
  EXPECT_TRUE(torch::equal(quantize_int8_tensorwise(x).values, expected));
}

TEST(QuantizeTensorwise, ZeroTensorGivesZerosAndUnitScale) {
  const Int8Tensor q = quantize_int8_tensorwise(torch::zeros({4, 4}, torch::kBFloat16));
  EXPECT_EQ(q.scale.item<float>(), 1.0F);
  EXPECT_EQ(q.values.abs().max().item<int>(), 0);
  EXPECT_EQ(dequantize(q, at::kBFloat16).abs().max().item<float>(), 0.0F);
}

TEST(QuantizeTensorwise, NonFiniteInputPropagatesInsteadOfHiding) {
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    at::Tensor x = torch::randn({8, 8});
    x[3][4] = bad;
    const Int8Tensor q = quantize_int8_tensorwise(x);
    EXPECT_FALSE(std::isfinite(q.scale.item<float>())) << bad;
    EXPECT_EQ(q.values.abs().max().item<int>(), 0) << bad;
    // Whatever uses the quantized tensor is non-finite: a GEMM with it, dequantized.
    const at::Tensor y =
        dequantize_int32(int8_gemm(q.values, q.values), q.scale, q.scale, at::kFloat);
    EXPECT_FALSE(torch::isfinite(y).all().item<bool>()) << bad;
  }
}

TEST(DequantizeInt32, AppliesTheProductOfScalesInFloat32) {
  const at::Tensor acc = torch::tensor({{1000, -7}, {0, 16129}}, torch::kInt);
  const at::Tensor sa = torch::tensor(0.5F);
  const at::Tensor sb = torch::tensor(0.25F);
  const at::Tensor y = dequantize_int32(acc, sa, sb, at::kFloat);
  EXPECT_TRUE(torch::equal(y, torch::tensor({{125.0F, -0.875F}, {0.0F, 2016.125F}})));
}

}  // namespace
}  // namespace lpbench::kernels::reference
