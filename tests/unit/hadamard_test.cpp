// The block Hadamard rotation's reference (kernels/reference/hadamard.h) and the glue that
// quantizes a rotated operand (kernels/torch/quantize_hadamard.h), on the CPU. The CUDA kernel
// is checked against both in tests/gpu/fused_kernels_test.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "kernels/reference/hadamard.h"
#include "kernels/reference/quantize.h"
#include "kernels/torch/quantize_hadamard.h"
#include "tests/support/tensor_compare.h"

namespace lpbench::kernels {
namespace {

using lpbench::test_support::relative_error;

TEST(Hadamard, TheRotationIsOrthogonalAndSpreadsAnOutlier) {
  torch::manual_seed(21);
  const at::Tensor a = torch::randn({40, 300});
  const at::Tensor b = torch::randn({24, 300});
  // 300 = 2 blocks of 128 and a tail of 44, left as it is.
  const at::Tensor ra = reference::hadamard_rotate(a, 128);
  const at::Tensor rb = reference::hadamard_rotate(b, 128);
  EXPECT_TRUE(torch::equal(ra.narrow(1, 256, 44), a.narrow(1, 256, 44)));
  EXPECT_LT(relative_error(at::mm(ra, rb.t()), at::mm(a, b.t())), 1e-5);    // (AH)(BH)ᵀ = ABᵀ
  EXPECT_LT(relative_error(reference::hadamard_rotate(ra, 128), a), 1e-5);  // H·H = I
  // One spike in a block of small values: after the rotation every value of the block has
  // magnitude spike/√b, so a per-tensor INT8 scale no longer flushes its neighbours.
  at::Tensor spike = torch::full({1, 64}, 0.01);
  spike.index_put_({0, 5}, 100.0);
  const at::Tensor spread = reference::hadamard_rotate(spike, 64).abs();
  EXPECT_LT(spread.max().item<double>(), 100.0 / 8.0 + 0.1);
  EXPECT_GT(spread.min().item<double>(), 100.0 / 8.0 - 0.1);
  EXPECT_THROW(reference::hadamard_rotate(a, 96), c10::Error);
}

// The butterfly, stage by stage, is the normalised Sylvester matrix H_b / √b applied to each
// block: compared with the product by the matrix built by doubling, [[H, H], [H, −H]], in FP64.
TEST(Hadamard, TheButterflyIsTheSylvesterMatrix) {
  torch::manual_seed(22);
  for (const int64_t block : {2, 8, 16, 128, 256}) {
    const at::Tensor m = torch::randn({6, 3 * block});
    at::Tensor h = torch::ones({1, 1}, torch::kDouble);
    while (h.size(0) < block) {
      h = torch::cat({torch::cat({h, h}, 1), torch::cat({h, -h}, 1)}, 0);
    }
    const at::Tensor expected =
        at::matmul(m.to(torch::kDouble).reshape({6, 3, block}), h / std::sqrt(double(block)))
            .reshape({6, 3 * block});
    const at::Tensor rotated = reference::hadamard_rotate(m, block);
    EXPECT_EQ(rotated.scalar_type(), torch::kFloat);
    EXPECT_LT(relative_error(rotated.to(torch::kDouble), expected), 1e-6) << "b = " << block;
  }
}

// On the CPU, quantize_hadamard is the rotation of the operand (X or Xᵀ) and then the
// reference's quantization, and never the kernel.
TEST(Hadamard, QuantizingARotatedOperandIsRotatingThenQuantizing) {
  torch::manual_seed(24);
  const at::Tensor x = torch::randn({64, 192}).to(torch::kBFloat16);
  for (const bool transpose : {false, true}) {
    for (const QuantSpec spec :
         {QuantSpec{NumberFormat::int8, 0, 0}, QuantSpec{NumberFormat::fp8_e4m3, 1, 0}}) {
      EXPECT_FALSE(hadamard_kernel_takes(x, transpose, 64, spec));
      const Quantized ours = quantize_hadamard(x, transpose, 64, spec);
      const Quantized ref =
          reference::quantize(reference::hadamard_rotate(transpose ? x.t() : x, 64), spec);
      EXPECT_TRUE(ours.values.view(at::kByte).equal(ref.values.view(at::kByte)));
      EXPECT_TRUE(ours.scales.equal(ref.scales));
      EXPECT_EQ(ours.values.size(0), transpose ? 192 : 64);
    }
  }
}

}  // namespace
}  // namespace lpbench::kernels
