// The producers writing their consumer's quantization in place of their output, on the GPU:
// SwiGLU (kernels::quantize_swiglu_with_transpose and the stand-in kernels::swiglu returns) under
// delayed scaling, SwiGLU's backward (the gate/up product's dY) likewise, and the norms
// (kernels::rms_norm, rms_norm_residual and add_rms_norm given their consumer) under delayed and
// current scaling, each against its output followed by the tensorwise quantization it replaces; and
// a fused decoder layer stepping to the same bits with the producers' quantization on and off
// (RoPE's backward among them; its kernel's own test is rope_quantize_test.cpp).
// Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <utility>

#include "kernels/recipe.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/rmsnorm.h"
#include "kernels/torch/swiglu.h"
#include "tests/support/gpu_layer.h"
#include "workloads/models/decoder.h"

namespace lpbench::kernels {
namespace {

bool same_bytes(const at::Tensor& a, const at::Tensor& b) {
  return a.cpu().contiguous().view(at::kByte).equal(b.cpu().contiguous().view(at::kByte));
}

// What the next quantization under `h` would be scaled by, as FP32 bits.
int32_t history_amax(const AmaxHistory& h, const at::Tensor& like) {
  return h.scaling_amax(like)->cpu().item<int32_t>();
}

// Three steps of the same two histories, each taking its first turn through the ordinary path;
// then SwiGLU's quantizing kernel on one and SwiGLU's forward followed by the one-pass
// quantization on the other give the same values, scales and recorded amaxes, where the values
// fit the history's scale, where they outgrow it (saturating), and with an Inf and a NaN.
TEST(SwigluQuantize, WritesTheBitsOfSwigluThenTheQuantization) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA);
  for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e4m3}) {
    SCOPED_TRACE(format == NumberFormat::int8 ? "int8" : "fp8_e4m3");
    const QuantSpec spec{format, 0, 0};
    AmaxHistory fused(3);
    AmaxHistory apart(3);
    torch::manual_seed(31);
    const double sizes[] = {1.0, 1.0, 4.0, 1.0};
    for (int step = 0; step < 4; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      at::Tensor gate_up = torch::randn({2, 192, 2 * 384}, bf16) * sizes[step];
      if (step == 3) {
        gate_up[0][5][7] = std::numeric_limits<float>::infinity();
        gate_up[1][9][384 + 11] = std::numeric_limits<float>::quiet_NaN();
      }
      const at::Tensor out = swiglu(gate_up);
      const auto [q, t] = quantize_with_transpose(out.reshape({-1, 384}), spec, &apart);
      const auto made = quantize_swiglu_with_transpose(gate_up, {&fused, spec});
      if (step == 0) {
        // A history's first turn is scaled by X's own amax: not the kernel's, and no turn taken.
        EXPECT_FALSE(made.has_value());
        EXPECT_EQ(fused.recorded(), 0);
        quantize_with_transpose(out.reshape({-1, 384}), spec, &fused);
        continue;
      }
      ASSERT_TRUE(made.has_value());
      EXPECT_TRUE(same_bytes(made->first.values, q.values));
      EXPECT_TRUE(same_bytes(made->second.values, t.values));
      EXPECT_TRUE(made->first.scales.cpu().equal(q.scales.cpu()));
      EXPECT_TRUE(made->second.scales.cpu().equal(t.scales.cpu()));
      EXPECT_EQ(history_amax(fused, gate_up), history_amax(apart, gate_up));
      EXPECT_EQ(fused.recorded(), apart.recorded());
    }
  }
}

// kernels::swiglu given its consumer's quantization returns a stand-in (every stride 0)
// and leaves the quantization for the consumer, which takes it once: the same bits as SwiGLU's
// output quantized. A second quantization of the stand-in, with nothing left waiting, fails
// rather than quantize zeros.
TEST(SwigluQuantize, LeavesItsQuantizationForTheConsumerOnce) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA);
  const QuantSpec spec{NumberFormat::int8, 0, 0};
  AmaxHistory fused(2);
  AmaxHistory apart(2);
  torch::manual_seed(33);
  const at::Tensor first = torch::randn({256, 2 * 256}, bf16);
  quantize_with_transpose(swiglu(first), spec, &fused);
  quantize_with_transpose(swiglu(first), spec, &apart);
  const at::Tensor gate_up = torch::randn({256, 2 * 256}, bf16);
  const at::Tensor stand_in = swiglu(gate_up, false, false, {}, {&fused, spec});
  EXPECT_EQ(stand_in.sizes(), (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(stand_in.stride(0), 0);
  EXPECT_EQ(stand_in.stride(1), 0);
  const auto [q, t] = quantize_with_transpose(stand_in, spec, &fused);
  const auto [q_apart, t_apart] = quantize_with_transpose(swiglu(gate_up), spec, &apart);
  EXPECT_TRUE(same_bytes(q.values, q_apart.values));
  EXPECT_TRUE(same_bytes(t.values, t_apart.values));
  EXPECT_TRUE(q.scales.cpu().equal(q_apart.scales.cpu()));
  EXPECT_THROW(quantize_with_transpose(stand_in, spec, &fused), c10::Error);

  // Switched off, SwiGLU writes its output and the consumer quantizes it.
  set_producer_quantization(false);
  const at::Tensor written = swiglu(gate_up, false, false, {}, {&fused, spec});
  set_producer_quantization(true);
  EXPECT_EQ(written.stride(1), 1);
  EXPECT_TRUE(written.equal(swiglu(gate_up)));
}

// SwiGLU's gradient d gate_up of `gate_up` [.., 2·inner] at `d_out`, by autograd through
// kernels::swiglu given `dy` for the gate/up product's dY quantization: the stand-in where the
// backward quantized it, else the gradient it wrote.
at::Tensor swiglu_gradient(const at::Tensor& gate_up, const at::Tensor& d_out,
                           const InputQuantization& dy) {
  const at::Tensor leaf = gate_up.detach().requires_grad_(true);
  const at::Tensor out = swiglu(leaf, false, false, {}, {}, dy);
  return torch::autograd::grad({out}, {leaf}, {d_out})[0];
}

// SwiGLU's backward given the gate/up product's dY quantization under a history: from the
// history's second turn on, the stand-in's waiting quantization has the values and scales of
// SwiGLU's gradient quantized apart, and the same recorded amax, for INT8 and E5M2, values within
// the history's scale, outgrowing it (saturating), tiny, and with an Inf and a NaN; a transposed
// quantization of the stand-in takes the second layout. Under a current scale (own_amax), at a
// history's first turn and off the kernel's grid (rows not a multiple of 128), the backward writes
// its gradient, the same bits as without the consumer.
TEST(SwigluQuantize, TheBackwardWritesTheBitsOfItsGradientThenTheQuantization) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA);
  constexpr int64_t kInner = 256;
  const auto flat = [](const at::Tensor& t) { return t.reshape({-1, 2 * kInner}); };
  for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e5m2}) {
    SCOPED_TRACE(format == NumberFormat::int8 ? "int8" : "fp8_e5m2");
    const QuantSpec spec{format, 0, 0};
    AmaxHistory fused(3);
    AmaxHistory apart(3);
    AmaxHistory transposed(3);
    torch::manual_seed(35);
    const double sizes[] = {1.0, 1.0, 4.0, 1.0, 1e-3};
    for (int step = 0; step < 5; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const at::Tensor gate_up = torch::randn({2, 192, 2 * kInner}, bf16);
      at::Tensor d_out = torch::randn({2, 192, kInner}, bf16) * sizes[step];
      if (step == 3) {
        d_out[0][5][7] = std::numeric_limits<float>::infinity();
        d_out[1][9][11] = std::numeric_limits<float>::quiet_NaN();
      }
      const at::Tensor plain = flat(swiglu_gradient(gate_up, d_out, {}));
      EXPECT_EQ(plain.stride(1), 1);
      const at::Tensor own = swiglu_gradient(gate_up, d_out, {nullptr, spec, true});
      EXPECT_EQ(own.stride(2), 1);
      EXPECT_TRUE(same_bytes(flat(own), plain));

      const auto [q, t] = quantize_with_transpose(plain, spec, &apart);
      const at::Tensor by_history = swiglu_gradient(gate_up, d_out, {&fused, spec});
      const at::Tensor by_history_t = swiglu_gradient(gate_up, d_out, {&transposed, spec});
      if (step == 0) {
        // A history's first turn is scaled by dY's own amax: the backward writes its gradient.
        EXPECT_TRUE(same_bytes(flat(by_history), plain));
        EXPECT_EQ(fused.recorded(), 0);
        quantize_with_transpose(flat(by_history), spec, &fused);
        quantize_with_transpose(flat(by_history_t), spec, &transposed);
        continue;
      }
      EXPECT_EQ(by_history.stride(2), 0);
      const auto [q_fused, t_fused] = quantize_with_transpose(flat(by_history), spec, &fused);
      EXPECT_TRUE(same_bytes(q_fused.values, q.values));
      EXPECT_TRUE(same_bytes(t_fused.values, t.values));
      EXPECT_TRUE(same_bytes(q_fused.scales, q.scales));
      EXPECT_TRUE(same_bytes(t_fused.scales, t.scales));
      EXPECT_EQ(history_amax(fused, gate_up), history_amax(apart, gate_up));
      EXPECT_EQ(fused.recorded(), apart.recorded());
      EXPECT_THROW(quantize_with_transpose(flat(by_history), spec, &fused), c10::Error);
      // wgrad alone (a product whose X needs no gradient) quantizes dY transposed only.
      const Quantized only_t = quantize(flat(by_history_t), spec, true, &transposed);
      EXPECT_TRUE(same_bytes(only_t.values, t.values));
    }
    // Rows off the 128 grid: written.
    const at::Tensor odd = torch::randn({200, 2 * kInner}, bf16);
    const at::Tensor d_odd = torch::randn({200, kInner}, bf16);
    const at::Tensor written = swiglu_gradient(odd, d_odd, {&fused, spec});
    EXPECT_EQ(written.stride(1), 1);
    EXPECT_TRUE(same_bytes(written, swiglu_gradient(odd, d_odd, {})));
  }
}

// The three norms, each with its consumer's quantization or none: (what goes on along the
// residual stream, the output).
enum class Norm { plain, residual, add };
std::pair<at::Tensor, at::Tensor> run(Norm norm, const at::Tensor& x, const at::Tensor& residual,
                                      const at::Tensor& weight, const InputQuantization& consumer,
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

// `body(norm, spec)` for each of the three norms and each narrow format (tensorwise), traced.
template <typename Body>
void for_each_norm_and_format(Body body) {
  for (const Norm norm : {Norm::plain, Norm::residual, Norm::add}) {
    for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e4m3}) {
      SCOPED_TRACE("norm " + std::to_string(static_cast<int>(norm)) +
                   (format == NumberFormat::int8 ? ", int8" : ", fp8_e4m3"));
      body(norm, QuantSpec{format, 0, 0});
    }
  }
}

// Four steps of two histories, the first turn of each through the ordinary path; from the second
// on, the norm given its consumer returns a stand-in (every stride 0) whose waiting quantization
// the consumer takes, with the same values, scales and recorded amax as the norm's output
// quantized apart: values within the history's scale, outgrowing it (saturating), and with an
// Inf and a NaN. The residual stream's h is written all the same.
TEST(RmsNormQuantize, WritesTheBitsOfTheNormThenTheQuantization) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA);
  for_each_norm_and_format([&](Norm norm, const QuantSpec& spec) {
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
      EXPECT_THROW(quantize_with_transpose(stand_in.reshape({-1, 384}), spec, &fused), c10::Error);
    }
  });
}

// Under a current scale (the consumer's own_amax) the norm finds y's amax without writing y and
// a second kernel computes y again from h, rstd and the weight as it quantizes it: the stand-in's
// waiting quantization has the values and scales of the norm's output quantized apart by its own
// amax, for values of any size, and with an Inf and a NaN (every value then 0, as the
// reference's). Taken once; the residual stream's h is written all the same.
TEST(RmsNormQuantize, ByItsOwnAmaxWritesTheBitsOfTheNormThenTheQuantization) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA);
  for_each_norm_and_format([&](Norm norm, const QuantSpec& spec) {
    const InputQuantization consumer{nullptr, spec, /*own_amax=*/true};
    torch::manual_seed(47);
    const at::Tensor weight =
        torch::randn({384}, torch::dtype(torch::kFloat).device(torch::kCUDA)) * 2.0;
    const double sizes[] = {1.0, 1e-3, 300.0, 1.0};
    for (int step = 0; step < 4; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const at::Tensor x = torch::randn({2, 256, 384}, bf16) * sizes[step];
      const at::Tensor residual = torch::randn({2, 256, 384}, bf16) * sizes[step];
      if (step == 3) {
        x[0][5][7] = std::numeric_limits<float>::infinity();
        x[1][9][11] = std::numeric_limits<float>::quiet_NaN();
      }
      const auto [h_apart, y] = run(norm, x, residual, weight, {});
      const auto [q, t] = quantize_with_transpose(y.reshape({-1, 384}), spec, nullptr);
      const auto [h, stand_in] = run(norm, x, residual, weight, consumer);
      EXPECT_TRUE(same_bytes(h, h_apart));
      ASSERT_EQ(stand_in.sizes(), y.sizes());
      EXPECT_EQ(stand_in.stride(0), 0);
      EXPECT_EQ(stand_in.stride(2), 0);
      const auto [fq, ft] = quantize_with_transpose(stand_in.reshape({-1, 384}), spec, nullptr);
      EXPECT_TRUE(same_bytes(fq.values, q.values));
      EXPECT_TRUE(same_bytes(ft.values, t.values));
      // Bit for bit: at step 3 both scales are the same NaN, which compares unequal.
      EXPECT_TRUE(same_bytes(fq.scales, q.scales));
      EXPECT_TRUE(same_bytes(ft.scales, t.scales));
      if (step == 3) {
        EXPECT_EQ(fq.values.count_nonzero().item<int64_t>(), 0);
      }
      EXPECT_THROW(quantize_with_transpose(stand_in.reshape({-1, 384}), spec, nullptr), c10::Error);
    }
  });
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

  // The same under a current scale.
  const InputQuantization own{nullptr, spec, /*own_amax=*/true};
  const at::Tensor own_saved = run(Norm::plain, x, {}, weight, own, true).second;
  EXPECT_EQ(own_saved.stride(1), 1);
  EXPECT_TRUE(same_bytes(own_saved, plain));
  set_producer_quantization(false);
  const at::Tensor own_off = run(Norm::plain, x, {}, weight, own).second;
  set_producer_quantization(true);
  EXPECT_EQ(own_off.stride(1), 1);
  EXPECT_TRUE(same_bytes(own_off, plain));
  const at::Tensor own_odd = run(Norm::plain, odd, {}, weight, own).second;
  EXPECT_EQ(own_odd.stride(1), 1);
  EXPECT_TRUE(same_bytes(own_odd, run(Norm::plain, odd, {}, weight, {}).second));
  // Nothing waits for them: their own values are quantized.
  const auto [q, t] = quantize_with_transpose(own_off, spec, nullptr);
  EXPECT_TRUE(same_bytes(q.values, quantize_with_transpose(plain, spec, nullptr).first.values));
}

// A fused layer steps to the same output and gradients whether the norms, SwiGLU (forward and
// backward) and RoPE's backward write their products' quantization or the products quantize their
// operands: under delayed scaling (three steps, so that the second and third take the producers'
// path; the first is the histories'), and under current scaling, where the norms do (by their
// output's own amax).
TEST(ProducerQuantize, ALayerStepsToTheSameBitsWithTheProducersQuantizationOnOrOff) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const std::string norms = "the attention norm, the MLP norm";
  const std::string delayed = norms + ", SwiGLU, SwiGLU's backward, RoPE's backward";
  const std::pair<const char*, std::string> cases[] = {
      {"int8-tensor:amax-history=4", delayed},
      {"int8-tensor:dy=row,amax-history=4", norms + ", SwiGLU"},
      {"fp8-tensor:amax-history=4", delayed},
      {"int8-tensor", norms},
      {"int8-tensor:dy=row", norms},
      {"fp8-tensor", norms}};
  // The small model's heads of 64 at the layer's 256 tokens: RoPE's backward takes them.
  ASSERT_TRUE(workloads::rope_backward_quantizes(workloads::builtin_model("small"),
                                                 test_support::kLayerSeq));
  for (const auto& [recipe, producers] : cases) {
    SCOPED_TRACE(recipe);
    EXPECT_EQ(workloads::quantizing_producers(parse_recipe(recipe), true, false, true), producers);
    test_support::LayerStep step[2];
    for (const bool on : {false, true}) {
      set_producer_quantization(on);
      test_support::GpuLayer layer(recipe, /*producer_amax=*/true, 7);
      at::Tensor y;
      for (int s = 0; s < 3; ++s) {
        const at::Tensor x = layer.random_input(1.0 + s).requires_grad_(true);
        y = layer.step(x, layer.random_input());
      }
      step[on] = layer.result(y);
    }
    set_producer_quantization(true);
    test_support::expect_same_layer_step(step[0], step[1]);
  }
}

}  // namespace
}  // namespace lpbench::kernels
