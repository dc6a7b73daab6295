// SwiGLU writing the down projection's quantization in place of its output (delayed scaling):
// kernels::quantize_swiglu_with_transpose and the stand-in kernels::swiglu returns for it, on the
// GPU, against SwiGLU's forward followed by the tensorwise quantization it replaces; and a fused
// decoder layer stepping to the same bits with the producer's quantization on and off. Skipped
// where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>

#include "kernels/recipe.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/swiglu.h"
#include "tests/support/layer_steps.h"
#include "tests/support/rope_tables.h"
#include "workloads/models/decoder.h"
#include "workloads/models/model_zoo.h"

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

// A fused layer under delayed scaling steps to the same output and gradients whether SwiGLU
// writes the down projection's quantization or the projection quantizes SwiGLU's output: three
// steps, so that the second and third take the producer's path (the first is the histories').
TEST(SwigluQuantize, ALayerStepsToTheSameBitsWithTheProducersQuantizationOnOrOff) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device gpu(torch::kCUDA, 0);
  const workloads::ModelConfig model = workloads::builtin_model("small");
  const int64_t seq = 256;
  const auto [cos_cpu, sin_cpu] = test_support::rope_tables(seq, model.head_dim);
  const at::Tensor cos = cos_cpu.to(gpu), sin = sin_cpu.to(gpu);
  for (const char* recipe : {"int8-tensor:amax-history=4", "int8-tensor:dy=row,amax-history=4",
                             "fp8-tensor:amax-history=4"}) {
    SCOPED_TRACE(recipe);
    EXPECT_EQ(workloads::quantizing_producers(parse_recipe(recipe), true, false),
              "the attention norm, the MLP norm, SwiGLU");
    test_support::LayerStep step[2];
    for (const bool on : {false, true}) {
      set_producer_quantization(on);
      torch::manual_seed(7);
      workloads::PrecisionPlan plan(parse_recipe(recipe), gpu, workloads::Fusion::fused,
                                    /*producer_amax=*/true);
      workloads::DecoderLayer layer(model, 0, plan);
      layer->to(gpu);
      const auto bf16 = torch::dtype(torch::kBFloat16).device(gpu);
      for (int s = 0; s < 3; ++s) {
        const at::Tensor x =
            torch::randn({2, seq, model.hidden_size}, bf16).mul(1.0 + s).requires_grad_(true);
        const at::Tensor grad = torch::randn({2, seq, model.hidden_size}, bf16);
        layer->zero_grad();
        const at::Tensor out = layer->forward(x, cos, sin);
        out.backward(grad);
        step[on].y = out.detach();
      }
      for (const auto& p : layer->named_parameters())
        step[on].grads.emplace_back(p.key(), p.value().grad().clone());
    }
    set_producer_quantization(true);
    test_support::expect_same_layer_step(step[0], step[1]);
  }
}

}  // namespace
}  // namespace lpbench::kernels
