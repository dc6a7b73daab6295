// kernels/torch/weight_amax.h on the CPU (its reference path; tests/gpu/weight_amax_test.cpp holds
// the kernel to the same oracle): one call's amaxes, the scope that remembers them for a layer's
// forward and forgets them after, which recipes' forwards would take a weight's amax, and a
// QuantizationBatch, which on the CPU gathers nothing.
#include <c10/util/bit_cast.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <vector>

#include "kernels/recipe.h"
#include "kernels/torch/amax_registry.h"
#include "kernels/torch/quantization_batch.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/quantized_linear.h"
#include "kernels/torch/weight_amax.h"

namespace lpbench::kernels {
namespace {

// max |x| as FP32 bits compared as integers (a NaN above +Inf), independently of the kernels.
int32_t oracle_bits(const at::Tensor& t) {
  return t.to(at::kFloat).contiguous().view(at::kInt).bitwise_and(0x7fffffff).max().item<int32_t>();
}

std::vector<at::Tensor> probe_tensors() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<at::Tensor> tensors;
  tensors.push_back(torch::randn({64, 48}).to(at::kBFloat16));
  tensors.push_back(torch::zeros({16}, at::kBFloat16));
  tensors.push_back(torch::randn({13}).to(at::kBFloat16) * 1e-3);  // not whole 16-byte vectors
  at::Tensor with_nan = torch::randn({32, 8}).to(at::kBFloat16);
  with_nan.view({-1})[100] = nan;
  tensors.push_back(with_nan);
  at::Tensor with_inf = torch::randn({8, 8}).to(at::kBFloat16);
  with_inf.view({-1})[3] = -inf;
  tensors.push_back(with_inf);
  tensors.push_back(torch::randn({24, 40}).to(at::kBFloat16).t());  // not contiguous
  return tensors;
}

TEST(WeightAmax, OneCallGivesEachTensorsMaxAbsAsFp32Bits) {
  const std::vector<at::Tensor> tensors = probe_tensors();
  const at::Tensor amax = tensors_amax(tensors);
  ASSERT_EQ(amax.numel(), static_cast<int64_t>(tensors.size()));
  EXPECT_EQ(amax.scalar_type(), at::kInt);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(amax[static_cast<int64_t>(i)].item<int32_t>(), oracle_bits(tensors[i])) << i;
  }
  EXPECT_EQ(amax[1].item<int32_t>(), 0);
  EXPECT_GT(amax[3].item<int32_t>(),
            c10::bit_cast<int32_t>(std::numeric_limits<float>::infinity()));
  EXPECT_EQ(amax[4].item<int32_t>(),
            c10::bit_cast<int32_t>(std::numeric_limits<float>::infinity()));
  EXPECT_THROW(tensors_amax({}), c10::Error);
}

// The scope finds what is not remembered, remembers it while it lasts and forgets it after; an
// amax remembered before it (an optimizer's) is neither found again nor forgotten, and one
// remembered for the same tensor inside the scope (a newer report) outlives it.
TEST(WeightAmax, TheScopeRemembersWhatItFoundUntilItEnds) {
  const at::Tensor a = torch::randn({32, 16}).to(at::kBFloat16);
  const at::Tensor b = torch::randn({16, 16}).to(at::kBFloat16);
  const at::Tensor reported = torch::randn({8, 16}).to(at::kBFloat16);
  const at::Tensor newer = torch::randn({8, 8}).to(at::kBFloat16);
  const at::Tensor by_optimizer = torch::tensor({12345}, torch::kInt);
  remember_amax(reported, by_optimizer);
  const at::Tensor newer_amax = torch::tensor({777}, torch::kInt);
  {
    const ScopedAmaxes scope({a, at::Tensor(), b, reported, newer});
    EXPECT_EQ(scope.found(), 3U);
    ASSERT_TRUE(recall_amax(a).has_value());
    EXPECT_EQ(recall_amax(a)->item<int32_t>(), oracle_bits(a));
    ASSERT_TRUE(recall_amax(b).has_value());
    EXPECT_EQ(recall_amax(b)->item<int32_t>(), oracle_bits(b));
    EXPECT_TRUE(recall_amax(reported)->is_same(by_optimizer));
    remember_amax(newer, newer_amax);
  }
  EXPECT_FALSE(recall_amax(a).has_value());
  EXPECT_FALSE(recall_amax(b).has_value());
  ASSERT_TRUE(recall_amax(reported).has_value());
  EXPECT_TRUE(recall_amax(reported)->is_same(by_optimizer));
  ASSERT_TRUE(recall_amax(newer).has_value());
  EXPECT_TRUE(recall_amax(newer)->is_same(newer_amax));
  // Nothing to find: no call at all.
  const ScopedAmaxes none({reported, at::Tensor()});
  EXPECT_EQ(none.found(), 0U);
}

// Which forwards quantize W tensorwise by W's own amax: not per row or block, not through an amax
// history, not where W stays BF16; dgrad's W counts unless saved=int8 quantizes it in backward.
TEST(WeightAmax, TheRecipesWhoseForwardTakesAWeightsAmax) {
  const auto takes = [](const char* recipe) {
    return forward_quantizes_w_tensorwise(
        decide(parse_recipe(recipe), "layers.0.mlp.down", ModuleKind::linear).gemms);
  };
  EXPECT_TRUE(takes("int8-tensor"));
  EXPECT_TRUE(takes("int8-tensor:dy=row"));
  EXPECT_TRUE(takes("fp8-tensor"));
  EXPECT_FALSE(takes("bf16"));
  EXPECT_FALSE(takes("int8-row"));
  EXPECT_FALSE(takes("int8-block"));
  EXPECT_FALSE(takes("int8-tensor:amax-history=16"));
}

// On the CPU a QuantizationBatch gathers nothing: each quantization is the reference's as it
// comes, inside the scope as outside, though the tensor's amax is remembered.
TEST(QuantizationBatch, GathersNothingOnTheCpu) {
  const at::Tensor w = torch::randn({128, 256}).to(at::kBFloat16) * 5.0;
  const QuantSpec spec{NumberFormat::int8, 0, 0};
  const ScopedAmaxes amaxes({w});
  QuantizationBatch batch;
  const auto [q, t] = quantize_with_transpose(w, spec);
  EXPECT_EQ(batch.gathered(), 0);
  const Quantized ref = reference::quantize(w, spec);
  EXPECT_TRUE(q.values.equal(ref.values));
  EXPECT_TRUE(q.scales.equal(ref.scales));
  EXPECT_TRUE(t.values.equal(ref.values.t().contiguous()));
}

}  // namespace
}  // namespace lpbench::kernels
