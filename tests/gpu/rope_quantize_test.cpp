// RoPE's backward writing the QKV product's dY quantization in place of the gradient, on the GPU
// (kernels::quantize_rope_backward_with_transpose and the amax-only RoPE before it): the bits of
// the gradient as RoPE's backward writes it, followed by the tensorwise quantization it replaces,
// under current scaling (the gradient's own amax) and delayed scaling (an amax history). The
// layer-level twin, the fused layer stepping alike with the producers' quantization on and off, is
// in producer_quantize_test.cpp. Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <c10/cuda/CUDAStream.h>

#include <cmath>
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

  // The gradient's amax as RoPE's backward finds it without writing the gradient.
  at::Tensor amax() const {
    cuda::RopeArgs p[3];
    parts(p);
    const at::Tensor bits = torch::zeros({1}, torch::dtype(torch::kInt32).device(torch::kCUDA));
    for (cuda::RopeArgs& a : p)
      a.amax = reinterpret_cast<uint32_t*>(bits.data_ptr<int32_t>());
    cuda::rope_parts(p, 3, c10::cuda::getCurrentCUDAStream().stream());
    return bits;
  }

  std::optional<std::pair<Quantized, Quantized>> quantized(const InputQuantization& input,
                                                           const at::Tensor& amax = {}) const {
    cuda::RopeArgs p[3];
    parts(p);
    return quantize_rope_backward_with_transpose(p, q, rows(), cols(), input, amax);
  }
};

struct Shape {
  int64_t batch, seq, heads, kv_heads, head_dim;
};
// llama-like heads of 128 with grouped k/v, and heads of 64 (the small model's), two of them a
// tile's columns.
const Shape kShapes[] = {{2, 256, 4, 2, 128}, {1, 128, 6, 2, 64}};

std::string name_of(const Shape& s) {
  return std::to_string(s.batch) + "x" + std::to_string(s.seq) + ", heads " +
         std::to_string(s.heads) + "/" + std::to_string(s.kv_heads) + " of " +
         std::to_string(s.head_dim);
}

// By the gradient's own amax: the amax-only RoPE finds the written gradient's amax bit for bit,
// and the kernel then makes the values and scales of both layouts of the written gradient
// quantized, INT8 and E5M2, with an Inf and a NaN among the values too (every value 0, as the
// reference's).
TEST(RopeQuantize, ByItsOwnAmaxTheBackwardWritesTheBitsOfItsGradientThenTheQuantization) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(41);
  for (const Shape& s : kShapes) {
    for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e5m2}) {
      for (const bool nonfinite : {false, true}) {
        SCOPED_TRACE(name_of(s) + (format == NumberFormat::int8 ? ", int8" : ", fp8_e5m2") +
                     (nonfinite ? ", an Inf and a NaN" : ""));
        const QuantSpec spec{format, 0, 0};
        Gradients g(s.batch, s.seq, s.heads, s.kv_heads, s.head_dim, 0.02);
        if (nonfinite) {
          g.k.select(0, 0).select(0, 3).select(0, 0).fill_(std::numeric_limits<float>::infinity());
          g.v.select(0, 0).select(0, 5).select(0, 1).fill_(std::numeric_limits<float>::quiet_NaN());
        }
        const at::Tensor x = g.written();
        const at::Tensor amax = g.amax();
        const float found = c10::bit_cast<float>(amax.cpu().item<int32_t>());
        if (nonfinite) {
          EXPECT_TRUE(std::isnan(found));  // a NaN tops every other value
        } else {
          EXPECT_EQ(found, x.abs().max().to(at::kFloat).cpu().item<float>());
        }
        const auto [q, t] = quantize_with_transpose(x, spec);
        const auto made = g.quantized({nullptr, spec, /*own_amax=*/true}, amax);
        ASSERT_TRUE(made.has_value());
        EXPECT_TRUE(same_bytes(made->first.values, q.values));
        EXPECT_TRUE(same_bytes(made->second.values, t.values));
        EXPECT_TRUE(same_bytes(made->first.scales, q.scales));
        EXPECT_TRUE(same_bytes(made->second.scales, t.scales));
      }
    }
  }
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
// sequence off the 128 grid, heads of 96 elements, a q part whose heads end inside a tile; and a
// spec it does not make (blocks, stochastic rounding) or no scale known ahead.
TEST(RopeQuantize, AppliesOnlyWhereItsTileKernelTakesTheShapesAndTheScale) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const QuantSpec spec{NumberFormat::int8, 0, 0};
  const InputQuantization own{nullptr, spec, /*own_amax=*/true};
  const auto applies = [](const Gradients& g, const InputQuantization& input) {
    cuda::RopeArgs p[3];
    g.parts(p);
    return rope_backward_quantization_applies(p, g.q, g.rows(), g.cols(), input);
  };
  EXPECT_TRUE(applies(Gradients(2, 256, 4, 2, 128, 1.0), own));
  EXPECT_TRUE(applies(Gradients(1, 128, 6, 2, 64, 1.0), own));
  EXPECT_FALSE(applies(Gradients(2, 192, 4, 2, 128, 1.0), own));  // 192 tokens a sequence
  EXPECT_FALSE(applies(Gradients(1, 256, 4, 2, 96, 1.0), own));   // heads of 96
  EXPECT_FALSE(applies(Gradients(1, 256, 3, 2, 64, 1.0), own));   // q's 192 columns
  EXPECT_FALSE(applies(Gradients(1, 256, 4, 2, 128, 1.0), {}));   // no scale known
  EXPECT_FALSE(
      applies(Gradients(1, 256, 4, 2, 128, 1.0), {nullptr, {NumberFormat::int8, 1, 0}, true}));
  EXPECT_FALSE(applies(Gradients(1, 256, 4, 2, 128, 1.0),
                       {nullptr, {NumberFormat::int8, 0, 0, Rounding::stochastic}, true}));
  EXPECT_FALSE(Gradients(2, 192, 4, 2, 128, 1.0).quantized(own).has_value());
}

}  // namespace
}  // namespace lpbench::kernels
