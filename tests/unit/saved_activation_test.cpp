// saved=int8 (Jetfire's data flow): what the fused operators keep between forward and backward,
// on the CPU (their references). Each backward must be the operator's backward at the restored
// input, bit for bit, and the BF16 tensor it restores from must be gone once the forward has run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "kernels/recipe.h"
#include "kernels/reference/quantize.h"
#include "kernels/reference/rmsnorm.h"
#include "kernels/reference/swiglu.h"
#include "kernels/torch/attention.h"
#include "kernels/torch/quantized_linear.h"
#include "kernels/torch/rmsnorm.h"
#include "kernels/torch/saved_activation.h"
#include "kernels/torch/swiglu.h"
#include "tests/support/rope_tables.h"
#include "tests/support/tensor_compare.h"

namespace lpbench::kernels {
namespace {

using lpbench::test_support::leaf;
using lpbench::test_support::relative_error;

// x through saved=int8 and back.
at::Tensor round_trip(const at::Tensor& x) {
  return restore_activation(save_activation(x, true), x.scalar_type());
}

// Whether the storage a tensor had is still held by anything once the caller drops it.
struct StorageWatch {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  explicit StorageWatch(const at::Tensor& t) : storage(t.storage().getWeakStorageImpl()) {}
  bool freed() const { return storage.expired(); }
};

TEST(SavedActivation, KeepsInt8BlocksOf128AndRestoresTheReferenceDequantization) {
  torch::manual_seed(11);
  // 200 columns: a whole block and a ragged one; 256: two whole ones.
  for (const int64_t cols : {200, 256}) {
    SCOPED_TRACE(cols);
    const at::Tensor x = (3 * torch::randn({3, 5, cols})).to(at::kBFloat16);
    const SavedActivation kept = save_activation(x, true);
    EXPECT_EQ(kept.values.scalar_type(), at::kChar);
    EXPECT_EQ(kept.values.sizes(), x.sizes());
    EXPECT_EQ(kept.scales.sizes(), (std::vector<int64_t>{15, (cols + 127) / 128}));

    const reference::Quantized q =
        reference::quantize(x.reshape({15, cols}), {NumberFormat::int8, 1, 128});
    EXPECT_TRUE(kept.values.reshape({15, cols}).equal(q.values));
    EXPECT_TRUE(kept.scales.equal(q.scales));
    const at::Tensor back = restore_activation(kept, at::kBFloat16);
    EXPECT_TRUE(back.equal(reference::dequantize(q, at::kBFloat16).view(x.sizes())));
    // Within half a step of each block's grid (amax / 127), plus the BF16 rounding of the result.
    const at::Tensor step = q.scales.repeat_interleave(128, 1).narrow(1, 0, cols).view(x.sizes());
    const at::Tensor err = (back.to(at::kFloat) - x.to(at::kFloat)).abs();
    EXPECT_TRUE((err <= 0.5 * step + x.to(at::kFloat).abs() / 256).all().item<bool>());
  }
  // Kept as it is: the tensor itself.
  const at::Tensor x = torch::randn({4, 64}).to(at::kBFloat16);
  const SavedActivation kept = save_activation(x, false);
  EXPECT_TRUE(kept.values.is_same(x));
  EXPECT_FALSE(kept.scales.defined());
  EXPECT_TRUE(restore_activation(kept, at::kBFloat16).is_same(x));
}

TEST(SavedActivation, SwigluDifferentiatesAtTheRestoredInputAndKeepsNoBf16Copy) {
  torch::manual_seed(12);
  const at::Tensor gu0 = (2 * torch::randn({4, 7, 256})).to(at::kBFloat16);
  const at::Tensor d = torch::randn({4, 7, 128}).to(at::kBFloat16);
  at::Tensor gu = leaf(gu0);
  at::Tensor product = gu * 1;
  const StorageWatch watch(product);
  const at::Tensor out = swiglu(product, false, true);
  product.reset();
  EXPECT_TRUE(watch.freed());           // only the INT8 copy lives until backward
  EXPECT_TRUE(out.equal(swiglu(gu0)));  // the forward reads the exact input
  out.backward(d);
  EXPECT_TRUE(gu.grad().equal(reference::swiglu_backward(d, round_trip(gu0))));
}

TEST(SavedActivation, RmsNormsDifferentiateAtTheRestoredInput) {
  torch::manual_seed(13);
  const at::Tensor x0 = torch::randn({3, 5, 128}).to(at::kBFloat16);
  const at::Tensor r0 = torch::randn({3, 5, 128}).to(at::kBFloat16);
  const at::Tensor w0 = 1.0 + 0.1 * torch::randn({128});
  const at::Tensor dy = torch::randn({3, 5, 128}).to(at::kBFloat16);
  const at::Tensor dh = torch::randn({3, 5, 128}).to(at::kBFloat16);

  // The norm alone: the backward reads the restored x and the forward's inverse RMS.
  at::Tensor x = leaf(x0), w = leaf(w0);
  at::Tensor input = x * 1;
  const StorageWatch watch(input);
  const at::Tensor y = rms_norm(input, w, 1e-5, false, true);
  input.reset();
  EXPECT_TRUE(watch.freed());
  const reference::RmsNormOut f = reference::rmsnorm_forward(x0, {}, w0, 1e-5);
  EXPECT_TRUE(y.equal(f.y));
  y.backward(dy);
  const reference::RmsNormGrads g = reference::rmsnorm_backward(dy, round_trip(x0), w0, f.rstd, {});
  EXPECT_TRUE(x.grad().equal(g.dh));
  EXPECT_TRUE(w.grad().equal(g.dweight));

  // The residual add and the norm: the sum h is what is kept.
  at::Tensor xa = leaf(x0), ra = leaf(r0), wa = leaf(w0);
  auto [h, ya] = add_rms_norm(xa, ra, wa, 1e-5, false, true);
  torch::autograd::backward({ya, h}, {dy, dh});
  const reference::RmsNormOut fa = reference::rmsnorm_forward(x0, r0, w0, 1e-5);
  EXPECT_TRUE(h.equal(fa.h));
  const reference::RmsNormGrads ga =
      reference::rmsnorm_backward(dy, round_trip(fa.h), w0, fa.rstd, dh);
  EXPECT_TRUE(xa.grad().equal(ga.dh));
  EXPECT_TRUE(ra.grad().equal(ga.dh));
  EXPECT_TRUE(wa.grad().equal(ga.dweight));
}

TEST(SavedActivation, AttentionRunsAgainOnTheRestoredQkvAndKeepsNothingElse) {
  torch::manual_seed(14);
  const AttentionShape shape{4, 2, 32};  // grouped queries; 128 columns of q: one block
  const int64_t batch = 2;
  const int64_t seq = 12;
  const auto [cos, sin] = test_support::rope_tables(seq, 32);
  const at::Tensor qkv0 = torch::randn({batch, seq, (4 + 2 * 2) * 32}).to(at::kBFloat16);
  const at::Tensor d = torch::randn({batch, seq, 4 * 32}).to(at::kBFloat16);

  at::Tensor qkv = leaf(qkv0);
  at::Tensor product = qkv * 1;
  const StorageWatch watch(product);
  const at::Tensor o = causal_attention(product, shape, cos, sin, false, true);
  product.reset();
  EXPECT_TRUE(watch.freed());  // neither the product nor SDPA's state is kept
  o.backward(d);

  // The same operator keeping BF16: the same output (the forward reads exact values), and a
  // gradient that differs by the INT8 rounding of q, k and v only.
  at::Tensor qkv_b = leaf(qkv0);
  const at::Tensor o_b = causal_attention(qkv_b * 1, shape, cos, sin);
  o_b.backward(d);
  EXPECT_TRUE(o.equal(o_b));
  const double gap = relative_error(qkv.grad(), qkv_b.grad());
  EXPECT_GT(gap, 0.0);
  EXPECT_LT(gap, 0.05);
}

// Qwen3's attention (per-head norms of q and k, RoPE, SDPA) under saved=int8 keeps only the
// projection's qkv: the forward is the composition's on the exact input, and every gradient
// (qkv and both norms' weights) is the composition's at the restored qkv, bit for bit.
TEST(SavedActivation, QkNormAttentionRunsAgainFromTheKeptQkvAlone) {
  torch::manual_seed(16);
  const AttentionShape shape{4, 2, 32};
  const int64_t batch = 2;
  const int64_t seq = 12;
  const double eps = 1e-6;
  const auto [cos, sin] = test_support::rope_tables(seq, 32);
  const at::Tensor qkv0 = torch::randn({batch, seq, (4 + 2 * 2) * 32}).to(at::kBFloat16);
  const at::Tensor qw0 = 1 + 0.1 * torch::randn({32});
  const at::Tensor kw0 = 1 + 0.1 * torch::randn({32});
  const at::Tensor d = torch::randn({batch, seq, 4 * 32}).to(at::kBFloat16);
  // The composition of the differentiable operators, as the unfused-attention path runs it.
  const auto composed = [&](const at::Tensor& qkv, const at::Tensor& qw, const at::Tensor& kw) {
    const at::Tensor q = qkv.narrow(-1, 0, 4 * 32).view({batch, seq, 4, 32});
    const at::Tensor k = qkv.narrow(-1, 4 * 32, 2 * 32).view({batch, seq, 2, 32});
    const at::Tensor v = qkv.narrow(-1, 6 * 32, 2 * 32).view({batch, seq, 2, 32});
    const at::Tensor qr = rope(rms_norm(q.contiguous(), qw, eps), cos, sin);
    const at::Tensor kr = rope(rms_norm(k.contiguous(), kw, eps), cos, sin);
    const at::Tensor o =
        at::scaled_dot_product_attention(qr.transpose(1, 2), kr.transpose(1, 2), v.transpose(1, 2),
                                         {}, 0.0, /*is_causal=*/true, std::nullopt, true);
    return o.transpose(1, 2).reshape({batch, seq, 4 * 32});
  };

  at::Tensor qkv = leaf(qkv0), qw = leaf(qw0), kw = leaf(kw0);
  at::Tensor product = qkv * 1;
  const StorageWatch watch(product);
  const at::Tensor o = qk_norm_attention_int8_saved(product, shape, qw, kw, eps, cos, sin);
  product.reset();
  EXPECT_TRUE(watch.freed());  // neither the product nor any state of the norms or SDPA
  EXPECT_TRUE(o.equal(composed(qkv0, qw0, kw0)));
  o.backward(d);

  at::Tensor qkv_r = leaf(round_trip(qkv0)), qw_r = leaf(qw0), kw_r = leaf(kw0);
  composed(qkv_r, qw_r, kw_r).backward(d);
  EXPECT_TRUE(qkv.grad().equal(qkv_r.grad()));
  EXPECT_TRUE(qw.grad().equal(qw_r.grad()));
  EXPECT_TRUE(kw.grad().equal(kw_r.grad()));
  EXPECT_GT(kw.grad().abs().sum().item<double>(), 0.0);
}

TEST(SavedActivation, RequantizingWInBackwardGivesTheSameGradientsBitForBit) {
  torch::manual_seed(15);
  const at::Tensor x0 = torch::randn({24, 256}).to(at::kBFloat16);
  const at::Tensor w0 = 0.05 * torch::randn({128, 256});
  const at::Tensor dy = torch::randn({24, 128}).to(at::kBFloat16);
  for (const char* name : {"int8-tensor", "int8-row", "int8-block", "int8-tensor:dy=row",
                           "int8-tensor:hadamard=64", "fp8-tensor"}) {
    SCOPED_TRACE(name);
    LinearGemms gemms = parse_recipe(name).gemms;
    auto run = [&](bool again) {
      gemms.requantize_w = again;
      at::Tensor x = leaf(x0);
      at::Tensor master = leaf(w0);
      const at::Tensor y = quantized_linear(x, w0.to(at::kBFloat16), gemms, "", master);
      y.backward(dy);
      return std::make_tuple(y.detach(), x.grad(), master.grad());
    };
    const auto [y, dx, dw] = run(false);
    const auto [y2, dx2, dw2] = run(true);
    EXPECT_TRUE(y.equal(y2));
    EXPECT_TRUE(dx.equal(dx2));
    EXPECT_TRUE(dw.equal(dw2));
  }
}

}  // namespace
}  // namespace lpbench::kernels
