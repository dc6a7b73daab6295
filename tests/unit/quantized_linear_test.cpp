// The quantized linear layer against BF16 autograd and against its own exact definition.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "kernels/recipe.h"
#include "kernels/reference/int8_gemm.h"
#include "kernels/reference/int8_quantize.h"
#include "kernels/torch/quantized_linear.h"

namespace lpbench::kernels {
namespace {

constexpr GemmSpec kInt8{NumberFormat::int8, Scaling::tensor};

double relative_error(const at::Tensor& value, const at::Tensor& reference) {
  const at::Tensor r = reference.to(at::kDouble);
  return ((value.to(at::kDouble) - r).norm() / r.norm()).item<double>();
}

struct LinearCase {
  at::Tensor x, w, grad_y;  // BF16 inputs and the upstream gradient
};

LinearCase make_case(int64_t seed, int64_t tokens = 96, int64_t k = 256, int64_t n = 192) {
  torch::manual_seed(seed);
  return {torch::randn({2, tokens / 2, k}).to(torch::kBFloat16),
          (torch::randn({n, k}) * 0.05).to(torch::kBFloat16),
          torch::randn({2, tokens / 2, n}).to(torch::kBFloat16)};
}

struct Results {
  at::Tensor y, grad_x, grad_w;
};

Results run(const LinearCase& c, const LinearGemms& gemms) {
  at::Tensor x = c.x.clone().requires_grad_(true);
  at::Tensor w = c.w.clone().requires_grad_(true);
  at::Tensor y = quantized_linear(x, w, gemms);
  y.backward(c.grad_y);
  return {y.detach(), x.grad(), w.grad()};
}

// The exact answer for the layer's inputs, in float64.
Results reference(const LinearCase& c) {
  const at::Tensor x = c.x.to(at::kDouble).reshape({-1, c.x.size(-1)});
  const at::Tensor w = c.w.to(at::kDouble);
  const at::Tensor g = c.grad_y.to(at::kDouble).reshape({-1, c.grad_y.size(-1)});
  return {at::mm(x, w.t()).view(c.grad_y.sizes()), at::mm(g, w).view(c.x.sizes()),
          at::mm(g.t(), x)};
}

TEST(QuantizedLinear, Bf16SpecsMatchTorchAutogradExactly) {
  const LinearCase c = make_case(0);
  const Results ours = run(c, LinearGemms::all_bf16());
  at::Tensor x = c.x.clone().requires_grad_(true);
  at::Tensor w = c.w.clone().requires_grad_(true);
  at::Tensor y = at::matmul(x, w.t());
  y.backward(c.grad_y);
  EXPECT_TRUE(torch::equal(ours.y, y.detach()));
  EXPECT_TRUE(torch::allclose(ours.grad_x, x.grad(), 0, 0)) << "dgrad";
  EXPECT_TRUE(torch::allclose(ours.grad_w, w.grad(), 0, 0)) << "wgrad";
}

TEST(QuantizedLinear, Int8ForwardIsExactlyItsDefinition) {
  const LinearCase c = make_case(1);
  const Results ours = run(c, {kInt8, kInt8, kInt8});
  const auto qx = reference::quantize_int8_tensorwise(c.x.reshape({-1, c.x.size(-1)}));
  const auto qw = reference::quantize_int8_tensorwise(c.w);
  const at::Tensor acc = reference::int8_gemm_int64(qx.values, qw.values).to(at::kInt);
  const at::Tensor y = reference::dequantize_int32(acc, qx.scale, qw.scale, at::kBFloat16);
  EXPECT_TRUE(torch::equal(ours.y.reshape({-1, c.w.size(0)}), y));
}

// Per-tensor INT8 of a Gaussian operand with n elements has a relative RMS error of about
// sqrt(2·ln n) / (127·sqrt(12)) ≈ 1 % here; a product of two such operands about 1.5 %. BF16
// alone is about 0.3 %. Bound: 3 %, twice the expected INT8 error.
constexpr double kInt8RelativeBound = 0.03;
constexpr double kBf16RelativeBound = 0.01;

TEST(QuantizedLinear, Int8ForwardAndGradientsTrackTheExactLayer) {
  for (int64_t seed : {2, 3, 4}) {
    const LinearCase c = make_case(seed);
    const Results exact = reference(c);
    const Results int8 = run(c, {kInt8, kInt8, kInt8});
    const Results bf16 = run(c, LinearGemms::all_bf16());
    EXPECT_LT(relative_error(bf16.y, exact.y), kBf16RelativeBound);
    EXPECT_LT(relative_error(int8.y, exact.y), kInt8RelativeBound) << "fprop, seed " << seed;
    EXPECT_LT(relative_error(int8.grad_x, exact.grad_x), kInt8RelativeBound) << "dgrad";
    EXPECT_LT(relative_error(int8.grad_w, exact.grad_w), kInt8RelativeBound) << "wgrad";
    // And INT8 is really quantizing: its error is well above BF16's.
    EXPECT_GT(relative_error(int8.y, exact.y), 2 * relative_error(bf16.y, exact.y));
  }
}

TEST(QuantizedLinear, MixedSpecsQuantizeOnlyTheNamedGemms) {
  const LinearCase c = make_case(5);
  const Results bf16 = run(c, LinearGemms::all_bf16());
  // wgrad in BF16, the rest INT8: dW is the BF16 one bit for bit, y and dX are not.
  const Results mixed = run(c, {kInt8, kInt8, GemmSpec{}});
  EXPECT_TRUE(torch::equal(mixed.grad_w, bf16.grad_w));
  EXPECT_FALSE(torch::equal(mixed.y, bf16.y));
  EXPECT_FALSE(torch::equal(mixed.grad_x, bf16.grad_x));
  // fprop in BF16 only.
  const Results fprop_bf16 = run(c, {GemmSpec{}, kInt8, kInt8});
  EXPECT_TRUE(torch::equal(fprop_bf16.y, bf16.y));
  EXPECT_FALSE(torch::equal(fprop_bf16.grad_w, bf16.grad_w));
}

TEST(QuantizedLinear, NoGradientIsComputedForAnInputThatNeedsNone) {
  const LinearCase c = make_case(6);
  at::Tensor w = c.w.clone().requires_grad_(true);
  at::Tensor y = quantized_linear(c.x, w, {kInt8, kInt8, kInt8});
  y.backward(c.grad_y);
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(c.x.grad().defined());
}

TEST(QuantizedLinear, RejectsMismatchedShapes) {
  const LinearCase c = make_case(7);
  EXPECT_THROW(quantized_linear(c.x, c.w.t(), LinearGemms::all_bf16()), c10::Error);
}

}  // namespace
}  // namespace lpbench::kernels
