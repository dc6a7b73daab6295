// RoPE's backward writing the QKV product's dY quantization in place of the gradient under delayed
// scaling, on the GPU (kernels::quantize_rope_backward_with_transpose): the bits of the gradient as
// RoPE's backward writes it, followed by the tensorwise quantization it replaces. The layer-level
// twin, the fused layer stepping alike with the producers' quantization on and off, is in
// producer_quantize_test.cpp. Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "kernels/cuda/rope.cuh"
#include "kernels/reference/rope.h"
#include "kernels/torch/quantize.h"
#include "tests/support/rope_tables.h"

namespace lpbench::kernels {
namespace {

// Bit for bit (scales included: a NaN amax makes a NaN scale in both, which `equal` calls unequal).
bool same_bytes(const at::Tensor& a, const at::Tensor& b) {
  return a.cpu().contiguous().view(at::kByte).equal(b.cpu().contiguous().view(at::kByte));
}

// Attention's gradients of one layer as SDPA's backward gives them: dQ, dK, dV each [B, heads,
// T, D] in memory, seen as [B, T, heads, D].
struct Gradients {
  at::Tensor q, k, v;
  at::Tensor cos, sin;

  Gradients(int64_t batch, int64_t seq, int64_t heads, int64_t kv_heads, int64_t head_dim,
            double scale) {
    const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA);
    const auto heads_of = [&](int64_t n) {
      return (torch::randn({batch, n, seq, head_dim}, bf16) * scale).transpose(1, 2);
    };
    q = heads_of(heads);
    k = heads_of(kv_heads);
    v = heads_of(kv_heads);
    auto tables = test_support::rope_tables(seq, head_dim);
    cos = tables.first.cuda();
    sin = tables.second.cuda();
  }

  int64_t rows() const { return q.size(0) * q.size(1); }
  int64_t cols() const { return (q.size(2) + 2 * k.size(2)) * q.size(3); }

  // The gradient of the fused QKV product as RoPE's backward writes it: dQ and dK rotated back
  // (the reference the kernel matches bit for bit), dV as it is, [B·T, cols].
  at::Tensor written() const {
    const auto flat = [this](const at::Tensor& x) { return x.reshape({q.size(0), q.size(1), -1}); };
    return at::cat({flat(reference::rope(q, cos, sin, /*inverse=*/true)),
                    flat(reference::rope(k, cos, sin, /*inverse=*/true)), flat(v)},
                   -1)
        .reshape({rows(), cols()});
  }

  // The three parts as cuda::rope_parts takes them for RoPE's backward, writing nothing.
  void parts(cuda::RopeArgs (&out)[3]) const {
    const at::Tensor* xs[] = {&q, &k, &v};
    for (int p = 0; p < 3; ++p) {
      const at::Tensor& x = *xs[p];
      cuda::RopeArgs& a = out[p];
      a = cuda::RopeArgs{};
      a.in = x.data_ptr();
      a.batch = x.size(0);
      a.seq = x.size(1);
      a.heads = x.size(2);
      a.head_dim = x.size(3);
      a.in_batch_stride = x.stride(0);
      a.in_token_stride = x.stride(1);
      a.in_head_stride = x.stride(2);
      a.cos = cos.data_ptr<float>();
      a.sin = sin.data_ptr<float>();
      a.inverse = p < 2;
      a.rotate = p < 2;
    }
  }

  std::optional<std::pair<Quantized, Quantized>> quantized(const InputQuantization& input) const {
    cuda::RopeArgs p[3];
    parts(p);
    return quantize_rope_backward_with_transpose(p, q, rows(), cols(), input);
  }
};

struct Shape {
  int64_t batch, seq, heads, kv_heads, head_dim;
};
// llama-like heads of 128 with grouped k/v, and heads of 64 (the small model's), two of them a
// 128-column slice. The first two take the tile of 128 tokens × 128 columns (k's 256 columns, q's
// 384); the last two, whose parts fill 512 columns each, the tile of 32 tokens × 512 columns,
// whose threads rotate four heads of a token with one read of its cos and sin.
const Shape kShapes[] = {
    {2, 256, 4, 2, 128}, {1, 128, 6, 2, 64}, {2, 128, 8, 4, 128}, {1, 256, 8, 8, 64}};

std::string name_of(const Shape& s) {
  return std::to_string(s.batch) + "x" + std::to_string(s.seq) + ", heads " +
         std::to_string(s.heads) + "/" + std::to_string(s.kv_heads) + " of " +
         std::to_string(s.head_dim);
}

// Under a history: its first turn is scaled by the gradient's own amax, which the kernel does
// not take (none, no turn taken); from the second on, the kernel's values, scales and recorded
// amax are those of the written gradient quantized under a twin history, for values within the
// history's scale, outgrowing it (saturating), tiny, and with an Inf and a NaN.
TEST(RopeQuantize, UnderAHistoryTheBackwardWritesTheBitsOfItsGradientThenTheQuantization) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(43);
  for (const Shape& s : kShapes) {
    for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e5m2}) {
      SCOPED_TRACE(name_of(s) + (format == NumberFormat::int8 ? ", int8" : ", fp8_e5m2"));
      const QuantSpec spec{format, 0, 0};
      AmaxHistory fused(3);
      AmaxHistory apart(3);
      const double sizes[] = {1.0, 1.0, 4.0, 1e-3, 1.0};
      for (int step = 0; step < 5; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        Gradients g(s.batch, s.seq, s.heads, s.kv_heads, s.head_dim, sizes[step]);
        if (step == 4) {
          g.q.select(0, 0).select(0, 7).select(0, 1).fill_(std::numeric_limits<float>::infinity());
          g.k.select(0, 0).select(0, 2).select(0, 0).fill_(std::numeric_limits<float>::quiet_NaN());
        }
        const at::Tensor x = g.written();
        const auto [q, t] = quantize_with_transpose(x, spec, &apart);
        const auto made = g.quantized({&fused, spec});
        if (step == 0) {
          EXPECT_FALSE(made.has_value());
          EXPECT_EQ(fused.recorded(), 0);
          quantize_with_transpose(x, spec, &fused);
          continue;
        }
        ASSERT_TRUE(made.has_value());
        EXPECT_TRUE(same_bytes(made->first.values, q.values));
        EXPECT_TRUE(same_bytes(made->second.values, t.values));
        EXPECT_TRUE(same_bytes(made->first.scales, q.scales));
        EXPECT_TRUE(same_bytes(made->second.scales, t.scales));
        EXPECT_EQ(fused.scaling_amax(x)->cpu().item<int32_t>(),
                  apart.scaling_amax(x)->cpu().item<int32_t>());
        EXPECT_EQ(fused.recorded(), apart.recorded());
      }
    }
  }
}

// Where the kernel does not take the shapes it says so beforehand and launches nothing: a
// sequence off the 128 grid, heads of 96 elements, a q part whose heads end inside a tile; nor
// a scale it does not make: the gradient's own amax (current scaling), a history's first turn,
// blocks, stochastic rounding.
TEST(RopeQuantize, AppliesOnlyWhereItsTileKernelTakesTheShapesAndTheScale) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const QuantSpec spec{NumberFormat::int8, 0, 0};
  AmaxHistory history(2);
  quantize_with_transpose(
      torch::randn({128, 128}, torch::dtype(torch::kBFloat16).device(torch::kCUDA)), spec,
      &history);  // its first turn
  AmaxHistory fresh(2);
  const InputQuantization delayed{&history, spec};
  const auto applies = [](const Gradients& g, const InputQuantization& input) {
    cuda::RopeArgs p[3];
    g.parts(p);
    return rope_backward_quantization_applies(p, g.q, g.rows(), g.cols(), input);
  };
  EXPECT_TRUE(applies(Gradients(2, 256, 4, 2, 128, 1.0), delayed));
  EXPECT_TRUE(applies(Gradients(1, 128, 6, 2, 64, 1.0), delayed));
  EXPECT_TRUE(applies(Gradients(2, 128, 8, 4, 128, 1.0), delayed));
  EXPECT_FALSE(applies(Gradients(2, 192, 4, 2, 128, 1.0), delayed));  // 192 tokens a sequence
  EXPECT_FALSE(applies(Gradients(1, 256, 4, 2, 96, 1.0), delayed));   // heads of 96
  EXPECT_FALSE(applies(Gradients(1, 256, 3, 2, 64, 1.0), delayed));   // q's 192 columns
  const Gradients g(1, 256, 4, 2, 128, 1.0);
  EXPECT_FALSE(applies(g, {nullptr, spec, /*own_amax=*/true}));
  EXPECT_FALSE(applies(g, {&fresh, spec}));
  EXPECT_FALSE(applies(g, {&history, {NumberFormat::int8, 1, 0}}));
  EXPECT_FALSE(applies(g, {&history, {NumberFormat::int8, 0, 0, Rounding::stochastic}}));
  EXPECT_FALSE(Gradients(2, 192, 4, 2, 128, 1.0).quantized(delayed).has_value());
  EXPECT_EQ(history.recorded(), 1);  // no turn taken
}

}  // namespace
}  // namespace lpbench::kernels
