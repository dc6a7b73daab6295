// kernels/cuda/tensors_amax.cu through its glue (kernels/torch/weight_amax.h) on the GPU: one
// launch's amaxes against the oracle for tensors of every size and content, in more tensors than
// one launch takes and with ones the kernel does not take between them; and a decoder layer whose
// forward finds its weights' amaxes together steps to the bits it steps to with every
// quantization finding its own; and the zeroed slots producers report their amaxes into
// (new_amax), eagerly and under a CUDA graph, among them the amax passes of tensorwise
// quantizations no producer reported for; and a QuantizationBatch's gathered quantizations of
// weights by their amaxes. Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "harness/runner/step_graph.h"
#include "kernels/cuda/tensors_amax.cuh"
#include "kernels/recipe.h"
#include "kernels/reference/quantize.h"
#include "kernels/torch/amax_registry.h"
#include "kernels/torch/quantization_batch.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/weight_amax.h"
#include "tests/support/bit_compare.h"
#include "tests/support/gpu_layer.h"
#include "workloads/models/decoder.h"

namespace lpbench::kernels {
namespace {

// max |x| as FP32 bits compared as integers (a NaN above +Inf), by torch's ops.
int32_t oracle_bits(const at::Tensor& t) {
  return t.to(at::kFloat).contiguous().view(at::kInt).bitwise_and(0x7fffffff).max().item<int32_t>();
}

// new_amax's words and new_line_amax's ranges on a GPU come from blocks zeroed in one launch
// each: each reads zero when handed out though the ranges before it were written, each starts
// 16-byte aligned, no two overlap, and a block still referenced is never zeroed again.
TEST(AmaxSlotsOnGpu, EachIsZeroWhenHandedOutAndItsOwn) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const at::Tensor like = torch::zeros({4}, torch::dtype(torch::kBFloat16).device(torch::kCUDA, 0));
  constexpr int64_t kRows = 4096;
  constexpr int64_t kCols = 22016;  // llama2-7b's dGU: 26 K words
  std::vector<at::Tensor> taken;
  for (int i = 0; i < 50; ++i) {  // 25 line ranges: more than two blocks of 1 MiB
    const bool lines = i % 2 == 1;
    at::Tensor t = lines ? new_line_amax(like, kRows, kCols) : new_amax(like);
    ASSERT_EQ(t.numel(), lines ? kRows + kCols : 1);
    ASSERT_EQ(t.scalar_type(), at::kInt);
    EXPECT_EQ(t.abs().max().item<int32_t>(), 0) << "range " << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.const_data_ptr()) % 16, 0U) << "range " << i;
    t.fill_(i + 1);  // as a producer's report would
    taken.push_back(t);
  }
  for (size_t i = 0; i < taken.size(); ++i)
    EXPECT_TRUE(taken[i].eq(static_cast<int32_t>(i) + 1).all().item<bool>()) << "range " << i;
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [begin, end) of each
  for (const at::Tensor& t : taken) {
    const auto begin = reinterpret_cast<uintptr_t>(t.const_data_ptr());
    spans.emplace_back(begin, begin + static_cast<uintptr_t>(t.numel()) * sizeof(int32_t));
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    EXPECT_LE(spans[i - 1].second, spans[i].first) << "ranges " << i - 1 << " and " << i;
}

// Under a CUDA graph's capture a producer's amax is zeroed by the graph itself, so every replay
// starts its report from zero, whatever the slot held after the replay before.
TEST(AmaxSlotsOnGpu, AGraphZeroesTheSlotsItTookAtEveryReplay) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const at::Tensor like = torch::zeros({4}, torch::dtype(torch::kBFloat16).device(torch::kCUDA, 0));
  const at::Tensor before = new_amax(like);  // an eager block, partly handed out
  at::Tensor taken;
  runner::StepGraph graph([&] {
    taken = new_amax(like);
    return workloads::StepOutput{};
  });
  ASSERT_TRUE(taken.defined());
  EXPECT_NE(taken.storage().unsafeGetStorageImpl(), before.storage().unsafeGetStorageImpl());
  for (int replay = 0; replay < 3; ++replay) {
    taken.fill_(1000 + replay);  // a report left from the last replay
    graph.replay();
    EXPECT_EQ(taken.item<int32_t>(), 0) << "replay " << replay;
  }
}

// A tensorwise quantization whose input no producer reported an amax for finds its own into a
// new_amax slot rather than a word it clears first (QuantizeArgs::workspace_zeroed): each of many
// calls, a large amax before a small one and across slot blocks, scales by its own input's amax,
// both layouts as the reference's bit for bit; and a graph replaying one scales each replay by
// the input it holds then (the slot zeroed by the graph itself).
TEST(AmaxSlotsOnGpu, ATensorwiseQuantizationFindsItsOwnAmaxInASlot) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA, 0);
  const QuantSpec spec{NumberFormat::int8, 0, 0};
  torch::manual_seed(11);
  for (int i = 0; i < 70; ++i) {
    // Every other input 1000 times smaller: a slot left holding the one before's amax would
    // scale it too coarsely.
    const at::Tensor x = torch::randn({256, 384}, bf16) * (i % 2 == 0 ? 1000.0 : 1.0);
    const auto [q, t] = quantize_with_transpose(x, spec);
    const Quantized ref = reference::quantize(x.cpu(), spec);
    ASSERT_TRUE(q.scales.cpu().equal(ref.scales)) << "call " << i;
    ASSERT_TRUE(q.values.cpu().equal(ref.values)) << "call " << i;
    ASSERT_TRUE(t.values.cpu().equal(ref.values.t().contiguous())) << "call " << i;
  }
  const at::Tensor input = torch::randn({256, 384}, bf16) * 1000.0;
  Quantized captured;
  runner::StepGraph graph([&] {
    captured = kernels::quantize(input, spec);
    return workloads::StepOutput{};
  });
  for (int replay = 0; replay < 3; ++replay) {
    input.copy_(torch::randn({256, 384}, bf16) * (replay == 1 ? 1.0 : 0.001));
    graph.replay();
    const Quantized ref = reference::quantize(input.cpu(), spec);
    EXPECT_TRUE(captured.scales.cpu().equal(ref.scales)) << "replay " << replay;
    EXPECT_TRUE(captured.values.cpu().equal(ref.values)) << "replay " << replay;
  }
}

TEST(WeightAmaxOnGpu, OneLaunchGivesEachTensorsAmaxAsTheOracle) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA, 0);
  torch::manual_seed(11);
  std::vector<at::Tensor> tensors;
  // Sizes from one vector to several waves of the grid, and the layer's shapes' proportions.
  for (const auto& shape : std::vector<std::vector<int64_t>>{
           {8}, {3, 40}, {1536, 1024}, {128, 11008}, {4096, 1032}, {24, 8}, {512, 512}})
    tensors.push_back(torch::randn(shape, bf16) * (1.0 + static_cast<double>(tensors.size())));
  tensors.push_back(torch::zeros({256}, bf16));
  at::Tensor with_nan = torch::randn({2048, 64}, bf16);
  with_nan.view({-1})[77777] = std::numeric_limits<float>::quiet_NaN();
  tensors.push_back(with_nan);
  at::Tensor with_inf = torch::randn({1000, 8}, bf16);
  with_inf.view({-1})[7999] = -std::numeric_limits<float>::infinity();
  tensors.push_back(with_inf);
  // Ones the kernel does not take (not whole 16-byte vectors, not contiguous, misaligned), between
  // and after ones it does: each slot is still its own tensor's.
  tensors.insert(tensors.begin() + 3, torch::randn({13}, bf16) * 100.0);
  tensors.insert(tensors.begin() + 6, torch::randn({64, 40}, bf16).t());
  tensors.push_back(torch::randn({1025}, bf16).narrow(0, 1, 1024) * 7.0);
  ASSERT_GT(tensors.size(), static_cast<size_t>(cuda::kMaxAmaxTensors));
  const at::Tensor amax = tensors_amax(tensors);
  ASSERT_TRUE(amax.is_cuda());
  ASSERT_EQ(amax.numel(), static_cast<int64_t>(tensors.size()));
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(amax[static_cast<int64_t>(i)].item<int32_t>(), oracle_bits(tensors[i])) << i;
  }
}

// int8-tensor and fp8-tensor quantize W tensorwise: with the producers reporting amaxes, the
// layer's forward finds its four weights' amaxes in one launch first, and the products read them;
// without, each quantization runs its own pass. The same bits either way: the layer's output and
// the gradients of the MLP's weights (attention's backward may sum in another order from run to
// run: the rest within 1e-2); and no weight's amax is remembered after the step.
TEST(WeightAmaxOnGpu, ALayerStepsToTheSameBitsWithItsWeightsAmaxesFoundTogether) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const char* name : {"int8-tensor", "fp8-tensor"}) {
    SCOPED_TRACE(name);
    test_support::LayerStep step[2];
    for (const bool producer_amax : {false, true}) {
      test_support::GpuLayer layer(name, producer_amax, 5);
      const std::vector<at::Tensor> weights = layer.layer()->weights_wanting_amax();
      EXPECT_EQ(weights.size(), producer_amax ? 4U : 0U);
      const at::Tensor x = layer.random_input().requires_grad_(true);
      const at::Tensor y = layer.step(x, layer.random_input());
      for (const at::Tensor& w : weights)
        EXPECT_FALSE(recall_amax(w).has_value());
      step[producer_amax] = layer.result(y);
    }
    test_support::expect_same_layer_step(step[0], step[1]);
  }
}

// Inside a QuantizationBatch the tensorwise quantizations by a remembered amax are gathered, and
// launched when it closes, eight at most a launch and one launch a format and set of layouts; each
// is then the reference's quantization, bit for bit: both layouts, one or the other, a transposed
// call, zeros, and a NaN's or an Inf's tensor (every value 0). The calls it does not take (off the
// 128 grid, no amax remembered) are launched as they come, and are the reference's too.
TEST(QuantizationBatchOnGpu, GatheredQuantizationsAreTheReferencesBits) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto bf16 = torch::dtype(torch::kBFloat16).device(torch::kCUDA, 0);
  torch::manual_seed(17);
  std::vector<at::Tensor> tensors;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{256, 384},
                                                             {128, 128},
                                                             {512, 256},
                                                             {384, 1024},
                                                             {128, 640},
                                                             {640, 128},
                                                             {256, 256},
                                                             {128, 256},
                                                             {256, 128},
                                                             {384, 384}}) {
    // Scales 1000 times apart: a tile scaled by another tensor's amax would show.
    const double scale = tensors.size() % 2 == 0 ? 1000.0 : 0.01;
    tensors.push_back(torch::randn(shape, bf16) * scale);
  }
  tensors[6].zero_();
  tensors[7].view({-1})[1234] = std::numeric_limits<float>::quiet_NaN();
  tensors[8].view({-1})[4321] = -std::numeric_limits<float>::infinity();
  const at::Tensor off_grid = torch::randn({100, 128}, bf16);
  const ScopedAmaxes amaxes([&] {
    std::vector<at::Tensor> all = tensors;
    all.push_back(off_grid);
    return all;
  }());
  const at::Tensor unremembered = torch::randn({256, 128}, bf16) * 3.0;

  struct Call {
    at::Tensor x;
    QuantSpec spec;
    int layouts;  // 0: both, 1: x's only, 2: a transposed call (xᵀ's)
    std::pair<Quantized, std::optional<Quantized>> out;
  };
  std::vector<Call> calls;
  const QuantSpec int8{NumberFormat::int8, 0, 0};
  const QuantSpec fp8{NumberFormat::fp8_e4m3, 0, 0};
  for (size_t i = 0; i < tensors.size(); ++i)
    calls.push_back({tensors[i], int8, 0, {}});  // ten: two launches
  calls.push_back({tensors[0], fp8, 0, {}});     // another format: a launch of its own
  calls.push_back({tensors[3], fp8, 0, {}});
  calls.push_back({tensors[1], int8, 1, {}});  // x's layout only: another instance
  calls.push_back({tensors[2], int8, 2, {}});  // xᵀ's only
  calls.push_back({tensors[4], int8, 2, {}});
  calls.push_back({off_grid, int8, 0, {}});      // not taken: launched at once
  calls.push_back({unremembered, int8, 0, {}});  // not taken: finds its amax
  int64_t gathered = 0;
  {
    QuantizationBatch batch;
    for (Call& c : calls) {
      if (c.layouts == 0) {
        auto [q, t] = quantize_with_transpose(c.x, c.spec);
        c.out = {std::move(q), std::move(t)};
      } else {
        c.out = {quantize(c.x, c.spec, c.layouts == 2), std::nullopt};
      }
    }
    gathered = batch.gathered();
  }
  EXPECT_EQ(gathered, static_cast<int64_t>(calls.size()) - 2);
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    const at::Tensor source = c.layouts == 2 ? c.x.t() : c.x;
    const Quantized ref = reference::quantize(source.cpu(), c.spec);
    EXPECT_TRUE(test_support::same_scales(ref.scales, c.out.first.scales)) << "call " << i;
    EXPECT_TRUE(c.out.first.values.cpu().equal(ref.values)) << "call " << i;
    if (c.layouts == 0) {
      ASSERT_TRUE(c.out.second.has_value()) << "call " << i;
      EXPECT_TRUE(test_support::same_scales(ref.scales, c.out.second->scales)) << "call " << i;
      EXPECT_TRUE(c.out.second->values.cpu().equal(ref.values.t().contiguous())) << "call " << i;
    }
  }
  // A NaN's and an Inf's tensor quantize to zeros; the others hold values.
  EXPECT_EQ(calls[7].out.first.values.cpu().ne(0).sum().item<int64_t>(), 0);
  EXPECT_EQ(calls[8].out.first.values.cpu().ne(0).sum().item<int64_t>(), 0);
  EXPECT_GT(calls[9].out.first.values.cpu().ne(0).sum().item<int64_t>(), 0);
}

}  // namespace
}  // namespace lpbench::kernels
