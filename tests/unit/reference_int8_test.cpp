// The exact INT8 GEMM of the CPU reference, against 64-bit integer arithmetic.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "kernels/reference/int8_gemm.h"

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

}  // namespace
}  // namespace lpbench::kernels::reference
