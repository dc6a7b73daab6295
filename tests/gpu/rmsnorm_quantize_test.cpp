// The norms writing their product's quantization in place of their output (delayed scaling):
// kernels::rms_norm, rms_norm_residual and add_rms_norm given their consumer's quantization, on
// the GPU, against the norm's output quantized by the one-pass kernel it replaces. (A fused
// layer stepping to the same bits with the producers' quantization on and off, the norms' and
// SwiGLU's together: swiglu_quantize_test.cpp.) Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <utility>

#include "kernels/torch/quantize.h"
#include "kernels/torch/rmsnorm.h"

namespace lpbench::kernels {
namespace {

bool same_bytes(const at::Tensor& a, const at::Tensor& b) {
  return a.cpu().contiguous().view(at::kByte).equal(b.cpu().contiguous().view(at::kByte));
}

int32_t history_amax(const AmaxHistory& h, const at::Tensor& like) {
  return h.scaling_amax(like)->cpu().item<int32_t>();
}

// The three norms, each with its consumer's quantization or none: (what goes on along the
// residual stream, the output).
enum class Norm { plain, residual, add };
std::pair<at::Tensor, at::Tensor> run(Norm norm, const at::Tensor& x, const at::Tensor& residual,
                                      const at::Tensor& weight, const DelayedInput& consumer,
                                      bool int8_saved = false) {
  constexpr double kEps = 1e-5;
  switch (norm) {
    case Norm::plain:
      return {x, rms_norm(x, weight, kEps, false, int8_saved, consumer)};
    case Norm::residual:
      return rms_norm_residual(x, weight, kEps, false, int8_saved, consumer);
    case Norm::add:
      return add_rms_norm(x, residual, weight, kEps, false, int8_saved, consumer);
  }
  return {};
}

// Four steps of two histories, the first turn of each through the ordinary path; from the second
// on, the norm given its consumer returns a stand-in (every stride 0) whose waiting quantization
// the consumer takes, with the same values, scales and recorded amax as the norm's output
// quantized apart: values within the history's scale, outgrowing it (saturating), and with an
// Inf and a NaN. The residual stream's h is written all the same.
TEST(RmsNormQuantize, WritesTheBitsOfTheNormThenTheQuantization) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA);
  for (const Norm norm : {Norm::plain, Norm::residual, Norm::add}) {
    for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e4m3}) {
      SCOPED_TRACE("norm " + std::to_string(static_cast<int>(norm)) +
                   (format == NumberFormat::int8 ? ", int8" : ", fp8_e4m3"));
      const QuantSpec spec{format, 0, 0};
      AmaxHistory fused(3);
      AmaxHistory apart(3);
      torch::manual_seed(41);
      const at::Tensor weight =
          torch::randn({384}, torch::dtype(torch::kFloat).device(torch::kCUDA)) * 2.0;
      const double sizes[] = {1.0, 1.0, 4.0, 1.0};
      for (int step = 0; step < 4; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const at::Tensor x = torch::randn({2, 192, 384}, bf16) * sizes[step];
        const at::Tensor residual = torch::randn({2, 192, 384}, bf16);
        // The weight scales a column to where it outgrows the history at step 2; at step 3 a
        // row holds an Inf (its rstd 0, so NaN · 0 there) and another a NaN.
        if (step == 3) {
          x[0][5][7] = std::numeric_limits<float>::infinity();
          x[1][9][11] = std::numeric_limits<float>::quiet_NaN();
        }
        const auto [h_apart, y] = run(norm, x, residual, weight, {});
        const auto [q, t] = quantize_with_transpose(y.reshape({-1, 384}), spec, &apart);
        const auto [h, stand_in] = run(norm, x, residual, weight, {&fused, spec});
        EXPECT_TRUE(same_bytes(h, h_apart));
        if (step == 0) {
          // A history's first turn is scaled by y's own amax: the norm writes y, taking no turn.
          EXPECT_EQ(stand_in.stride(-1), 1);
          EXPECT_EQ(fused.recorded(), 0);
          EXPECT_TRUE(same_bytes(stand_in, y));
          quantize_with_transpose(stand_in.reshape({-1, 384}), spec, &fused);
          continue;
        }
        EXPECT_EQ(stand_in.sizes(), y.sizes());
        EXPECT_EQ(stand_in.stride(0), 0);
        EXPECT_EQ(stand_in.stride(2), 0);
        const auto [fq, ft] = quantize_with_transpose(stand_in.reshape({-1, 384}), spec, &fused);
        EXPECT_TRUE(same_bytes(fq.values, q.values));
        EXPECT_TRUE(same_bytes(ft.values, t.values));
        EXPECT_TRUE(fq.scales.cpu().equal(q.scales.cpu()));
        EXPECT_TRUE(ft.scales.cpu().equal(t.scales.cpu()));
        EXPECT_EQ(history_amax(fused, x), history_amax(apart, x));
        EXPECT_EQ(fused.recorded(), apart.recorded());
        // Taken once: a second quantization of the stand-in fails rather than read its storage.
        EXPECT_THROW(quantize_with_transpose(stand_in.reshape({-1, 384}), spec, &fused),
                     c10::Error);
      }
    }
  }
}

// Where the norm keeps its input as INT8 blocks (saved=int8), where producers' quantization is
// switched off, and where the kernel does not take the shape (rows off the 128 grid), the norm
// writes its output: the same bits as without a consumer, and the history's turn is the
// consumer's to take.
TEST(RmsNormQuantize, WritesItsOutputWhereItDoesNotQuantize) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA);
  const QuantSpec spec{NumberFormat::int8, 0, 0};
  AmaxHistory history(2);
  torch::manual_seed(43);
  const at::Tensor weight = torch::rand({256}, torch::dtype(torch::kFloat).device(torch::kCUDA));
  const at::Tensor first = torch::randn({256, 256}, bf16);
  quantize_with_transpose(run(Norm::plain, first, {}, weight, {}).second, spec, &history);
  ASSERT_EQ(history.recorded(), 1);

  const at::Tensor x = torch::randn({256, 256}, bf16);
  const at::Tensor plain = run(Norm::plain, x, {}, weight, {}).second;
  const at::Tensor saved = run(Norm::plain, x, {}, weight, {&history, spec}, true).second;
  EXPECT_EQ(saved.stride(1), 1);
  EXPECT_TRUE(same_bytes(saved, plain));
  set_producer_quantization(false);
  const at::Tensor off = run(Norm::plain, x, {}, weight, {&history, spec}).second;
  set_producer_quantization(true);
  EXPECT_EQ(off.stride(1), 1);
  EXPECT_TRUE(same_bytes(off, plain));
  const at::Tensor odd = torch::randn({200, 256}, bf16);
  const at::Tensor odd_out = run(Norm::plain, odd, {}, weight, {&history, spec}).second;
  EXPECT_EQ(odd_out.stride(1), 1);
  EXPECT_TRUE(same_bytes(odd_out, run(Norm::plain, odd, {}, weight, {}).second));
  EXPECT_EQ(history.recorded(), 1);  // none of them took a turn
}

}  // namespace
}  // namespace lpbench::kernels
