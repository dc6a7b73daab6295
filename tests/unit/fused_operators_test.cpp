// The fused operators (kernels/torch) against the readable composition they replace, on the CPU
// (where they run their references): the same values, and through their autograd functions the
// same gradients, each within the rounding its math allows. tests/gpu holds their CUDA kernels
// to the references.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "kernels/recipe.h"
#include "kernels/reference/rope.h"
#include "kernels/torch/amax_registry.h"
#include "kernels/torch/attention.h"
#include "kernels/torch/embedding.h"
#include "kernels/torch/quantized_linear.h"
#include "kernels/torch/rmsnorm.h"
#include "kernels/torch/swiglu.h"
#include "tests/support/rope_tables.h"
#include "tests/support/tensor_compare.h"
#include "tests/support/unfused_loss.h"

namespace lpbench::kernels {
namespace {

using lpbench::test_support::leaf;
using lpbench::test_support::relative_error;

// One BF16 rounding of a value of unit scale is 2^-8; a relative error over a whole tensor below
// a few of those means "the same up to the order of FP32 operations and one rounding".
constexpr double kBf16 = 1.0 / 256;

at::Tensor unfused_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  const at::Tensor xf = x.to(at::kFloat);
  return (xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps) * w).to(x.scalar_type());
}

TEST(FusedOperators, AddRmsNormMatchesTheAddThenTheNormWithGradients) {
  torch::manual_seed(1);
  const at::Tensor x0 = torch::randn({3, 5, 64}).to(at::kBFloat16);
  const at::Tensor r0 = torch::randn({3, 5, 64}).to(at::kBFloat16);
  const at::Tensor w0 = 1.0 + 0.1 * torch::randn({64});
  const at::Tensor dy = torch::randn({3, 5, 64}).to(at::kBFloat16);
  const at::Tensor dh = torch::randn({3, 5, 64}).to(at::kBFloat16);

  at::Tensor x = leaf(x0), r = leaf(r0), w = leaf(w0);
  auto [h, y] = add_rms_norm(x, r, w, 1e-5);
  torch::autograd::backward({y, h}, {dy, dh});

  at::Tensor xu = leaf(x0), ru = leaf(r0), wu = leaf(w0);
  const at::Tensor hu = xu + ru;
  const at::Tensor yu = unfused_norm(hu, wu, 1e-5);
  torch::autograd::backward({yu, hu}, {dy, dh});

  EXPECT_TRUE(h.equal(hu));  // one BF16 add either way
  EXPECT_LT(relative_error(y, yu), kBf16);
  EXPECT_LT(relative_error(x.grad(), xu.grad()), 2 * kBf16);
  EXPECT_TRUE(x.grad().equal(r.grad()));
  EXPECT_LT(relative_error(w.grad(), wu.grad()), 1e-4);  // FP32 sums
  EXPECT_EQ(w.grad().scalar_type(), at::kFloat);

  at::Tensor x2 = leaf(x0), w2 = leaf(w0);
  rms_norm(x2, w2, 1e-5).backward(dy);
  at::Tensor x2u = leaf(x0), w2u = leaf(w0);
  unfused_norm(x2u, w2u, 1e-5).backward(dy);
  EXPECT_LT(relative_error(x2.grad(), x2u.grad()), 2 * kBf16);
  EXPECT_LT(relative_error(w2.grad(), w2u.grad()), 1e-4);
}

// The norm of an x the residual stream carries on: x itself comes back, and the stream's
// gradient reaches x through the norm's backward, the same bits as add_rms_norm's backward at the
// same sum (so a layer gets the same gradients whether its input arrives added or not), and
// within one rounding of autograd summing the two gradients after the plain norm.
TEST(FusedOperators, RmsNormResidualTakesTheStreamsGradientIntoTheNormsBackward) {
  torch::manual_seed(2);
  const at::Tensor a0 = torch::randn({3, 5, 64}).to(at::kBFloat16);
  const at::Tensor b0 = torch::randn({3, 5, 64}).to(at::kBFloat16);
  const at::Tensor w0 = 1.0 + 0.1 * torch::randn({64});
  const at::Tensor dy = torch::randn({3, 5, 64}).to(at::kBFloat16);
  const at::Tensor dh = torch::randn({3, 5, 64}).to(at::kBFloat16);

  at::Tensor a = leaf(a0), b = leaf(b0), w = leaf(w0);
  const at::Tensor sum = a + b;
  auto [x, y] = rms_norm_residual(sum, w, 1e-5);
  EXPECT_TRUE(x.equal(sum));
  EXPECT_EQ(x.data_ptr(), sum.data_ptr());  // no copy
  torch::autograd::backward({y, x}, {dy, dh});

  at::Tensor af = leaf(a0), bf = leaf(b0), wf = leaf(w0);
  auto [h, yf] = add_rms_norm(af, bf, wf, 1e-5);
  torch::autograd::backward({yf, h}, {dy, dh});
  EXPECT_TRUE(y.equal(yf));
  EXPECT_TRUE(a.grad().equal(af.grad()));
  EXPECT_TRUE(b.grad().equal(bf.grad()));
  EXPECT_TRUE(w.grad().equal(wf.grad()));

  at::Tensor xu = leaf(sum.detach()), wu = leaf(w0);
  torch::autograd::backward({rms_norm(xu, wu, 1e-5), xu * 1}, {dy, dh});
  EXPECT_LT(relative_error(a.grad(), xu.grad()), 2 * kBf16);
  EXPECT_LT(relative_error(w.grad(), wu.grad()), 1e-4);

  // Nothing used the stream: the norm's gradient alone, as rms_norm's.
  at::Tensor xs = leaf(sum.detach()), ws = leaf(w0);
  rms_norm_residual(xs, ws, 1e-5).second.backward(dy);
  at::Tensor xp = leaf(sum.detach()), wp = leaf(w0);
  rms_norm(xp, wp, 1e-5).backward(dy);
  EXPECT_TRUE(xs.grad().equal(xp.grad()));
}

TEST(FusedOperators, SwigluMatchesSiluTimesUpWithGradients) {
  torch::manual_seed(2);
  const at::Tensor gu0 = (2 * torch::randn({4, 7, 48})).to(at::kBFloat16);
  const at::Tensor d = torch::randn({4, 7, 24}).to(at::kBFloat16);
  at::Tensor gu = leaf(gu0);
  const at::Tensor out = swiglu(gu);
  out.backward(d);
  at::Tensor guu = leaf(gu0);
  const at::Tensor outu = at::silu(guu.narrow(-1, 0, 24)) * guu.narrow(-1, 24, 24);
  outu.backward(d);
  EXPECT_TRUE(out.equal(outu));  // the same two roundings
  EXPECT_LT(relative_error(gu.grad(), guu.grad()), 2 * kBf16);
}

TEST(FusedOperators, CausalAttentionMatchesRopeThenSdpaWithGradients) {
  torch::manual_seed(3);
  const AttentionShape shape{4, 2, 16};  // grouped queries: 4 heads over 2 key/value heads
  const int64_t batch = 2;
  const int64_t seq = 12;
  const auto [cos, sin] = test_support::rope_tables(seq, 16);
  const at::Tensor qkv0 = torch::randn({batch, seq, (4 + 2 * 2) * 16}).to(at::kBFloat16);
  const at::Tensor d = torch::randn({batch, seq, 4 * 16}).to(at::kBFloat16);

  // Through a product, as in the layer: the operator rotates its input in place.
  at::Tensor qkv = leaf(qkv0);
  const at::Tensor o = causal_attention(qkv * 1, shape, cos, sin);
  o.backward(d);

  at::Tensor qkvu = leaf(qkv0);
  auto heads = [&](int64_t first, int64_t n) {
    return qkvu.narrow(-1, first * 16, n * 16).view({batch, seq, n, 16});
  };
  const at::Tensor q = reference::rope(heads(0, 4), cos, sin).transpose(1, 2);
  const at::Tensor k = reference::rope(heads(4, 2), cos, sin).transpose(1, 2);
  const at::Tensor v = heads(6, 2).transpose(1, 2);
  const at::Tensor ou = at::scaled_dot_product_attention(q, k, v, {}, 0.0, true, std::nullopt, true)
                            .transpose(1, 2)
                            .reshape({batch, seq, 64});
  ou.backward(d);
  EXPECT_LT(relative_error(o, ou), 1e-6);  // the same operations on the same values
  EXPECT_LT(relative_error(qkv.grad(), qkvu.grad()), 1e-6);
  EXPECT_TRUE(qkv0.equal(qkv.detach()));  // the leaf untouched: only the product was rotated

  // Once its backward ran, the operator holds nothing of its forward, though its graph lives on
  // while its output does (until the training step ends): the product it read is freed.
  {
    at::Tensor product = qkv * 1;
    const c10::weak_intrusive_ptr<c10::StorageImpl> kept = product.storage().getWeakStorageImpl();
    const at::Tensor o2 = causal_attention(product, shape, cos, sin);
    product.reset();
    EXPECT_FALSE(kept.expired());  // saved for backward
    o2.backward(d);
    EXPECT_TRUE(kept.expired());
  }

  // The stand-alone RoPE operator (after Qwen3's per-head norms) and its gradient.
  at::Tensor x = leaf(heads(0, 4).detach());
  const at::Tensor rx = rope(x, cos, sin);
  EXPECT_TRUE(rx.equal(reference::rope(x.detach(), cos, sin)));
  rx.backward(rx.detach());
  EXPECT_LT(relative_error(x.grad(), x.detach()), kBf16);  // a rotation back: the input again
}

// Qwen3's attention: the per-head norms of q and k and RoPE in one operator (qk_norm_rope.h)
// against the composition the unfused decoder runs (the norm, the reference RoPE, SDPA).
TEST(FusedOperators, CausalAttentionWithPerHeadNormsMatchesNormsThenRopeThenSdpa) {
  torch::manual_seed(5);
  const AttentionShape shape{4, 2, 16};
  const int64_t batch = 2;
  const int64_t seq = 12;
  const double eps = 1e-6;
  const auto [cos, sin] = test_support::rope_tables(seq, 16);
  const at::Tensor qkv0 = (3 * torch::randn({batch, seq, (4 + 2 * 2) * 16})).to(at::kBFloat16);
  const at::Tensor qw0 = 1.0 + 0.2 * torch::randn({16});
  const at::Tensor kw0 = 1.0 + 0.2 * torch::randn({16});
  const at::Tensor d = torch::randn({batch, seq, 4 * 16}).to(at::kBFloat16);

  at::Tensor qkv = leaf(qkv0), qw = leaf(qw0), kw = leaf(kw0);
  const at::Tensor o = causal_attention(qkv * 1, shape, cos, sin, false, false, {qw, kw, eps});
  o.backward(d);

  at::Tensor qkvu = leaf(qkv0), qwu = leaf(qw0), kwu = leaf(kw0);
  auto heads = [&](int64_t first, int64_t n) {
    return qkvu.narrow(-1, first * 16, n * 16).view({batch, seq, n, 16});
  };
  const at::Tensor q = reference::rope(rms_norm(heads(0, 4), qwu, eps), cos, sin);
  const at::Tensor k = reference::rope(rms_norm(heads(4, 2), kwu, eps), cos, sin);
  const at::Tensor ou = at::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                         heads(6, 2).transpose(1, 2), {}, 0.0, true,
                                                         std::nullopt, true)
                            .transpose(1, 2)
                            .reshape({batch, seq, 64});
  ou.backward(d);
  EXPECT_LT(relative_error(o, ou), 1e-6);  // the same operations on the same values
  // RoPE's backward as one rotation against autograd's sum of two products: an FP32 rounding
  // apart before the BF16 one.
  EXPECT_LT(relative_error(qkv.grad(), qkvu.grad()), 2 * kBf16);
  EXPECT_LT(relative_error(qw.grad(), qwu.grad()), 1e-2);
  EXPECT_LT(relative_error(kw.grad(), kwu.grad()), 1e-2);
  EXPECT_GT(qw.grad().abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(qkv0.equal(qkv.detach()));

  // Freed after its backward, as without the norms.
  at::Tensor product = qkv * 1;
  const c10::weak_intrusive_ptr<c10::StorageImpl> kept = product.storage().getWeakStorageImpl();
  const at::Tensor o2 = causal_attention(product, shape, cos, sin, false, false, {qw, kw, eps});
  product.reset();
  EXPECT_FALSE(kept.expired());
  o2.backward(d);
  EXPECT_TRUE(kept.expired());

  // One weight without the other, or the norms with saved=int8, is refused.
  EXPECT_THROW(causal_attention(qkv0, shape, cos, sin, false, false, {qw0, at::Tensor(), eps}),
               c10::Error);
  EXPECT_THROW(causal_attention(qkv0, shape, cos, sin, false, true, {qw0, kw0, eps}), c10::Error);
}

TEST(FusedOperators, LinearCrossEntropyMatchesLogitsThenTheLoss) {
  torch::manual_seed(4);
  const at::Tensor h0 = torch::randn({50, 32}).to(at::kBFloat16);
  const at::Tensor master0 = 0.1 * torch::randn({97, 32});
  const at::Tensor targets = torch::randint(0, 97, {50}, torch::kLong);
  // Chunks of 16 tokens: four chunks, the last a partial one.
  // A backward from 1, and from 1/3 as a mean over three micro-batches passes it.
  for (const double scale : {1.0, 1.0 / 3.0}) {
    const auto r = test_support::loss_against_unfused(h0, master0, targets, 16, scale);
    EXPECT_LT(std::abs(r.loss - r.unfused_loss), 1e-5 * r.unfused_loss);
    EXPECT_LT(r.dh_error, 2 * kBf16) << scale;
    // FP32 straight from the product, where the unfused gradient went through BF16.
    EXPECT_EQ(r.dw_type, at::kFloat);
    EXPECT_LT(r.dw_error, 2 * kBf16) << scale;
  }
}

// The lookup reads the FP32 table's rows and rounds them: the bits of a BF16 copy's rows, with no
// copy kept.
TEST(FusedOperators, EmbeddingGradientReachesTheFp32MasterExactly) {
  torch::manual_seed(5);
  at::Tensor master = leaf(torch::randn({40, 16}));
  const at::Tensor tokens = torch::randint(0, 40, {3, 9}, torch::kLong);
  const at::Tensor d = torch::randn({3, 9, 16}).to(at::kBFloat16);
  const at::Tensor out = embedding(master, tokens, at::kBFloat16);
  EXPECT_EQ(out.scalar_type(), at::kBFloat16);
  out.backward(d);
  at::Tensor masteru = leaf(master.detach());
  at::embedding(masteru.to(at::kBFloat16), tokens).backward(d);
  EXPECT_TRUE(out.equal(at::embedding(master.detach().to(at::kBFloat16), tokens)));
  // The unfused gradient sums in BF16 and then widens; the fused one sums in FP32.
  EXPECT_TRUE(
      master.grad().equal(at::embedding_dense_backward(d.to(at::kFloat), tokens, 40, -1, false)));
  EXPECT_LT(relative_error(master.grad(), masteru.grad()), kBf16);
}

// By rows, the embedding's gradient holds the rows its tokens reached, coalesced, each the dense
// backward's row to the bit (tokens repeat, so rows sum several of them).
TEST(FusedOperators, EmbeddingGradientByRowsHoldsTheDenseGradientsRows) {
  torch::manual_seed(6);
  at::Tensor master = leaf(torch::randn({40, 16}));
  const at::Tensor tokens = torch::tensor({3, 17, 3, 39, 0, 17, 17, 5}, torch::kLong).view({2, 4});
  const at::Tensor d = torch::randn({2, 4, 16}).to(at::kBFloat16);
  const at::Tensor out = embedding(master, tokens, at::kBFloat16, /*gradient_by_rows=*/true);
  EXPECT_TRUE(out.equal(at::embedding(master.detach().to(at::kBFloat16), tokens)));
  out.backward(d);
  ASSERT_TRUE(master.grad().is_sparse());
  // Distinct rows already: coalescing (which autograd's accumulation may ask again) moves none.
  const at::Tensor g = master.grad().coalesce();
  EXPECT_TRUE(g._values().equal(master.grad()._values()));
  EXPECT_EQ(g.sizes(), master.sizes());
  EXPECT_TRUE(g._indices().equal(torch::tensor({0, 3, 5, 17, 39}, torch::kLong).view({1, 5})));
  EXPECT_TRUE(
      g.to_dense().equal(at::embedding_dense_backward(d.to(at::kFloat), tokens, 40, -1, false)));
}

// With a master, the weight gradient is the wgrad product itself in FP32, for every recipe.
TEST(FusedOperators, QuantizedLinearGivesTheMasterAnFp32WeightGradient) {
  torch::manual_seed(6);
  const at::Tensor x0 = torch::randn({2, 24, 64}).to(at::kBFloat16);
  const at::Tensor master0 = 0.05 * torch::randn({48, 64});
  const at::Tensor d = torch::randn({2, 24, 48}).to(at::kBFloat16);
  for (const char* name : {"bf16", "int8-tensor", "int8-row", "int8-block", "int8-fallback"}) {
    const LinearGemms gemms = recipe_by_name(name).gemms;
    at::Tensor x = leaf(x0), master = leaf(master0);
    const at::Tensor y =
        quantized_linear(x, master.detach().to(at::kBFloat16), gemms, "probe", master);
    y.backward(d);
    at::Tensor xu = leaf(x0), masteru = leaf(master0);
    const at::Tensor yu = quantized_linear(xu, masteru.to(at::kBFloat16), gemms, "probe");
    yu.backward(d);
    EXPECT_TRUE(y.equal(yu)) << name;
    EXPECT_TRUE(x.grad().equal(xu.grad())) << name;
    ASSERT_EQ(master.grad().scalar_type(), at::kFloat) << name;
    // The unfused gradient is the same product rounded to BF16, then widened.
    EXPECT_TRUE(master.grad().to(at::kBFloat16).equal(masteru.grad().to(at::kBFloat16))) << name;
  }
}

// A producer's amax is found again for the same elements (a reshape, a transpose) and never for
// other elements, a tensor changed in place, or a new tensor where a freed one lay.
TEST(AmaxRegistry, RecallsOnlyWhatWasReportedForTheSameElements) {
  const at::Tensor x = torch::randn({6, 8});
  const at::Tensor amax = torch::tensor({7}, torch::kInt);
  remember_amax(x, amax);
  ASSERT_TRUE(recall_amax(x).has_value());
  EXPECT_TRUE(recall_amax(x)->equal(amax));
  EXPECT_TRUE(recall_amax(x.reshape({48})).has_value());
  EXPECT_TRUE(recall_amax(x.t()).has_value());
  EXPECT_FALSE(recall_amax(x.narrow(0, 1, 3)).has_value());  // other elements
  EXPECT_FALSE(recall_amax(x.clone()).has_value());          // another storage
  x.mul_(2);                                                 // changed in place
  EXPECT_FALSE(recall_amax(x).has_value());

  const void* address = nullptr;
  {
    const at::Tensor gone = torch::randn({1024});
    address = gone.data_ptr();
    remember_amax(gone, amax);
  }
  // The allocator may hand the same address to the next tensor of that size: it is not `gone`.
  const at::Tensor next = torch::randn({1024});
  if (next.data_ptr() == address) {
    EXPECT_FALSE(recall_amax(next).has_value());
  }
}

// A producer's row and column amaxes are found again only by a quantization per row both ways
// of the same elements read as rows of the same width: not through recall_amax (a tensorwise
// quantization would take the first row's amax for the tensor's), not for a transpose, whose
// rows are the other lines, and not with another width.
TEST(AmaxRegistry, RecallsLineAmaxesOnlyForTheSameRows) {
  const at::Tensor x = torch::randn({2, 3, 8});
  const at::Tensor lines = new_line_amax(x, 6, 8);
  ASSERT_EQ(lines.numel(), 14);
  EXPECT_EQ(lines.scalar_type(), at::kInt);
  EXPECT_TRUE(lines.eq(0).all().item<bool>());
  remember_line_amax(x, lines, 8);
  ASSERT_TRUE(recall_line_amax(x.reshape({6, 8}), 8).has_value());
  EXPECT_TRUE(recall_line_amax(x.reshape({6, 8}), 8)->is_same(lines));
  EXPECT_FALSE(recall_amax(x).has_value());
  EXPECT_FALSE(recall_line_amax(x.reshape({6, 8}).t(), 6).has_value());  // the transpose
  EXPECT_FALSE(recall_line_amax(x.reshape({12, 4}), 4).has_value());     // other rows
  EXPECT_FALSE(recall_line_amax(x.reshape({6, 8}).narrow(0, 0, 3), 8).has_value());
  // A tensor amax reported later for the same elements replaces the lines, and the other way.
  remember_amax(x, torch::tensor({7}, torch::kInt));
  EXPECT_FALSE(recall_line_amax(x, 8).has_value());
  EXPECT_TRUE(recall_amax(x).has_value());
  remember_line_amax(x, lines, 8);
  EXPECT_FALSE(recall_amax(x).has_value());
  x.add_(1);  // changed in place
  EXPECT_FALSE(recall_line_amax(x, 8).has_value());
  // A count of amaxes that is not rows + cols is the caller's mistake, said as such.
  EXPECT_THROW(remember_line_amax(x, new_line_amax(x, 6, 9), 8), c10::Error);
}

// A producer's path without a kernel folds max |x| of what it wrote into the amax, as the kernels'
// atomics do: the larger of the two as FP32 bits, a NaN above everything.
TEST(AmaxRegistry, AProducerWithoutAKernelFoldsItsAmaxAsTheKernelsDo) {
  const auto bits = [](float v) { return c10::bit_cast<int32_t>(v); };
  const at::Tensor amax = new_amax(torch::zeros({1}));
  fold_amax(amax, torch::tensor({0.5F, -3.0F, 2.0F}).to(at::kBFloat16));
  EXPECT_EQ(amax.item<int32_t>(), bits(3.0F));
  fold_amax(amax, torch::tensor({1.0F, -2.5F}));  // smaller: kept
  EXPECT_EQ(amax.item<int32_t>(), bits(3.0F));
  fold_amax(amax, torch::tensor({-4.0F}));
  EXPECT_EQ(amax.item<int32_t>(), bits(4.0F));
  fold_amax(amax, torch::tensor({1.0F, std::numeric_limits<float>::quiet_NaN()}));
  EXPECT_GT(amax.item<int32_t>(), bits(std::numeric_limits<float>::infinity()));
}

// The optimizer remembers an amax for every weight copy it writes each step: hundreds at full
// depth, all of which the next forward looks up. The newest amax for the same elements wins.
TEST(AmaxRegistry, HoldsAStepsWorthOfWeightCopiesAndTheNewestAmax) {
  std::vector<at::Tensor> copies;
  for (int i = 0; i < 600; ++i) {
    copies.push_back(torch::zeros({4}));
    remember_amax(copies.back(), torch::tensor({i}, torch::kInt));
  }
  for (int i = 0; i < 600; ++i) {
    const std::optional<at::Tensor> amax = recall_amax(copies[static_cast<size_t>(i)]);
    ASSERT_TRUE(amax.has_value()) << i;
    EXPECT_EQ(amax->item<int32_t>(), i);
  }
  remember_amax(copies[0], torch::tensor({1000}, torch::kInt));
  EXPECT_EQ(recall_amax(copies[0])->item<int32_t>(), 1000);
}

}  // namespace
}  // namespace lpbench::kernels
