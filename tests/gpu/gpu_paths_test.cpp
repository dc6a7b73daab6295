// The training paths on the GPU against the same layer on the CPU: every INT8 recipe bit for bit
// (the CPU reference is the definition), through each INT8 GEMM backend; FP8 within the rounding
// of its accumulation. Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <tuple>

#include "kernels/cuda/wgmma_gemm.cuh"
#include "kernels/recipe.h"
#include "kernels/reference/int8_gemm.h"
#include "kernels/reference/scaled_gemm.h"
#include "kernels/torch/gemm_stats.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/quantized_linear.h"
#include "kernels/torch/rounding_seed.h"
#include "kernels/torch/scaled_gemm.h"
#include "tests/support/tensor_compare.h"
#include "workloads/levels/workload.h"

namespace lpbench::kernels {
namespace {

using lpbench::test_support::relative_error;

struct Results {
  at::Tensor y, grad_x, grad_w;
};

struct Inputs {
  at::Tensor x, w, grad_y;  // BF16, on the CPU
};

Inputs inputs(int64_t seed) {
  torch::manual_seed(seed);
  at::Tensor x = torch::randn({4, 128, 1024});
  x.select(1, 9).select(-1, 300).mul_(80.0);  // an outlier channel, for int8-fallback
  return {x.to(torch::kBFloat16), (torch::randn({768, 1024}) * 0.05).to(torch::kBFloat16),
          torch::randn({4, 128, 768}).to(torch::kBFloat16)};
}

Results run(const Inputs& in, const LinearGemms& gemms, const torch::Device& device) {
  // detach(): on the CPU .to() returns the input itself, which must not become a leaf of this
  // graph, or the next run's copy of it would be a non-leaf with no .grad.
  // The same rounding seeds on both devices: stochastic rounding draws one per quantization.
  seed_stochastic_rounding(11);
  at::Tensor x = in.x.to(device).detach().requires_grad_(true);
  at::Tensor w = in.w.to(device).detach().requires_grad_(true);
  at::Tensor y = quantized_linear(x, w, gemms, "probe");
  y.backward(in.grad_y.to(device));
  return {y.detach().cpu(), x.grad().cpu(), w.grad().cpu()};
}

class GpuPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the GPU paths are not run";
  }
  void TearDown() override { set_int8_backend(Int8Backend::automatic); }
};

TEST_F(GpuPaths, Int8RecipesMatchTheCpuReferenceBitForBitOnEveryBackend) {
  const Inputs in = inputs(1);
  for (const char* name :
       {"int8-tensor", "int8-row", "int8-block", "int8-fallback", "int8-tensor:wgrad=bf16",
        "switchback", "int8-tensor:dy=row", "int8-tensor:dy=bf16",
        "int8-tensor:dy-rounding=stochastic", "int8-row:dy-rounding=stochastic",
        "int8-block:dy-rounding=stochastic", "int8-tensor:hadamard=128", "int8-row:hadamard=64",
        "int8-block:hadamard=64", "int8-tensor:hadamard=64,dy-rounding=stochastic",
        "int8-block:k-block=256", "int8-block:k-block=512", "int8-fallback:k-block=256"}) {
    const LinearGemms gemms = parse_recipe(name).gemms;
    take_fallback_counts();
    const Results cpu = run(in, gemms, torch::kCPU);
    const auto cpu_counts = take_fallback_counts();
    for (Int8Backend backend :
         {Int8Backend::cublaslt, Int8Backend::lpbench_mma, Int8Backend::torch_int_mm,
          Int8Backend::lpbench_wgmma, Int8Backend::automatic}) {
      set_int8_backend(backend);
      const Results gpu = run(in, gemms, torch::Device(torch::kCUDA, 0));
      const std::string where = std::string(name) + " on " + std::string(to_string(backend));
      EXPECT_TRUE(torch::equal(gpu.y, cpu.y)) << where << " fprop";
      if (gemms.dgrad.quantized()) {
        EXPECT_TRUE(torch::equal(gpu.grad_x, cpu.grad_x)) << where << " dgrad";
      }
      if (gemms.wgrad.quantized()) {
        EXPECT_TRUE(torch::equal(gpu.grad_w, cpu.grad_w)) << where << " wgrad";
      }
      const auto gpu_counts = take_fallback_counts();
      if (std::string(name) == "int8-fallback") {
        // The outlier channel of X sends some of fprop's blocks to 16 bits (dY has none, so
        // dgrad may keep all of its); the GPU picks the same blocks as the reference.
        ASSERT_FALSE(cpu_counts.empty());
        EXPECT_GT(cpu_counts.at("probe.fprop").fallback, 0);
        for (const auto& [key, count] : cpu_counts) {
          EXPECT_EQ(gpu_counts.at(key).fallback, count.fallback) << where << " " << key;
        }
      }
    }
  }
}

// The wgrad product adding into a master's defined gradient (gradient accumulation fusion): for
// INT8, through every backend (the wgmma kernel adds in its epilogue, the others add after), the
// same bits as the gradient plus the product written out on the same device, in place; and that
// product within FP32 rounding of the CPU's. BF16 adds through cuBLAS with beta = 1, which may sum
// in another order than the product alone: within FP32 rounding.
TEST_F(GpuPaths, TheWgradProductAddsIntoADefinedGradient) {
  const Inputs in = inputs(3);
  const at::Tensor before = torch::randn(in.w.sizes()) * 0.1;
  // The master's gradient after one backward, from `start` (undefined: autograd's product).
  const auto wgrad = [&](const LinearGemms& gemms, const torch::Device& device,
                         const at::Tensor& start) {
    at::Tensor master = in.w.to(device).to(at::kFloat).detach().requires_grad_(true);
    const void* storage = nullptr;
    if (start.defined()) {
      master.mutable_grad() = start.to(device);
      storage = master.grad().data_ptr();
    }
    at::Tensor x = in.x.to(device).detach().requires_grad_(true);
    quantized_linear(x, in.w.to(device), gemms, "probe", master, nullptr, nullptr, true)
        .backward(in.grad_y.to(device));
    if (storage != nullptr) {
      EXPECT_EQ(master.grad().data_ptr(), storage) << "added in place";
    }
    return master.grad().cpu();
  };
  const torch::Device gpu(torch::kCUDA, 0);
  for (const char* name :
       {"int8-tensor", "int8-row", "int8-block", "int8-fallback", "int8-tensor:hadamard=128"}) {
    const LinearGemms gemms = parse_recipe(name).gemms;
    const at::Tensor cpu_product = wgrad(gemms, torch::kCPU, {});
    for (Int8Backend backend : {Int8Backend::lpbench_wgmma, Int8Backend::cublaslt,
                                Int8Backend::lpbench_mma, Int8Backend::automatic}) {
      set_int8_backend(backend);
      const std::string where = std::string(name) + " on " + std::string(to_string(backend));
      const at::Tensor product = wgrad(gemms, gpu, {});
      EXPECT_TRUE(torch::equal(wgrad(gemms, gpu, before), before + product)) << where;
      EXPECT_LT(relative_error(product, cpu_product), 1e-6)
          << where << ": " << product.ne(cpu_product).sum().item<int64_t>() << " of "
          << product.numel() << " differ from the CPU's";
    }
  }
  set_int8_backend(Int8Backend::automatic);
  const LinearGemms bf16 = LinearGemms::all_bf16();
  EXPECT_LT(relative_error(wgrad(bf16, gpu, before) - before, wgrad(bf16, gpu, {})), 1e-5);
}

// K of 100, 52 and 111 (fprop, dgrad, wgrad): none a multiple of the tensor cores' K step, as an
// MoE expert's routed token count is not. The GPU pads K with zeros, which changes no product.
TEST_F(GpuPaths, ShapesOffTheTensorCoreGridStillMatchTheReference) {
  torch::manual_seed(5);
  const Inputs in{torch::randn({3, 37, 100}).to(torch::kBFloat16),
                  (torch::randn({52, 100}) * 0.1).to(torch::kBFloat16),
                  torch::randn({3, 37, 52}).to(torch::kBFloat16)};
  for (const char* name : {"int8-tensor", "int8-row", "int8-block"}) {
    const LinearGemms gemms = parse_recipe(name).gemms;
    const Results cpu = run(in, gemms, torch::kCPU);
    for (Int8Backend backend :
         {Int8Backend::cublaslt, Int8Backend::lpbench_mma, Int8Backend::torch_int_mm,
          Int8Backend::lpbench_wgmma, Int8Backend::automatic}) {
      set_int8_backend(backend);
      const Results gpu = run(in, gemms, torch::Device(torch::kCUDA, 0));
      const std::string where = std::string(name) + " on " + std::string(to_string(backend));
      EXPECT_TRUE(torch::equal(gpu.y, cpu.y)) << where << " fprop";
      EXPECT_TRUE(torch::equal(gpu.grad_x, cpu.grad_x)) << where << " dgrad";
      EXPECT_TRUE(torch::equal(gpu.grad_w, cpu.grad_w)) << where << " wgrad";
    }
  }
  for (const char* name : {"fp8-tensor", "fp8-row", "fp8-block"}) {
    const LinearGemms gemms = parse_recipe(name).gemms;
    const Results cpu = run(in, gemms, torch::kCPU);
    const Results gpu = run(in, gemms, torch::Device(torch::kCUDA, 0));
    EXPECT_LT(relative_error(gpu.y, cpu.y), 5e-3) << name;
    EXPECT_LT(relative_error(gpu.grad_x, cpu.grad_x), 5e-3) << name;
    EXPECT_LT(relative_error(gpu.grad_w, cpu.grad_w), 5e-3) << name;
  }
}

// A vocabulary-long K (Qwen3's LM head wgrad: K = 151936) is past what INT32 accumulators over all
// of K hold exactly; the wgmma backend hands such a tensorwise product on instead of refusing it,
// and the result is the cuBLASLt backend's, bit for bit.
TEST_F(GpuPaths, TheWgmmaBackendPassesOnAKTooLongForItsAccumulators) {
  torch::manual_seed(9);
  const int64_t k = reference::kInt8GemmMaxK + 16 * 100;
  const at::Tensor x = torch::randn({64, k}, torch::kCUDA).to(torch::kBFloat16);
  const at::Tensor w = torch::randn({128, k}, torch::kCUDA).to(torch::kBFloat16);
  const Quantized a = kernels::quantize(x, QuantSpec{});
  const Quantized b = kernels::quantize(w, QuantSpec{});
  set_int8_backend(Int8Backend::lpbench_wgmma);
  EXPECT_NE(scaled_gemm_backend(a, b, x.device()), "lpbench-wgmma");
  const at::Tensor via_wgmma_choice = kernels::scaled_gemm(a, b, at::kBFloat16);
  set_int8_backend(Int8Backend::automatic);
  EXPECT_NE(scaled_gemm_backend(a, b, x.device()), "lpbench-wgmma");
  const at::Tensor via_auto = kernels::scaled_gemm(a, b, at::kBFloat16);
  set_int8_backend(Int8Backend::cublaslt);
  const at::Tensor via_cublaslt = kernels::scaled_gemm(a, b, at::kBFloat16);
  EXPECT_TRUE(torch::equal(via_wgmma_choice, via_cublaslt));
  EXPECT_TRUE(torch::equal(via_auto, via_cublaslt));
}

// The default backend: the wgmma kernel for every INT8 recipe's products on Hopper, cuBLASLt (and
// lpbench's mma.sync kernel for block scales) on other GPUs.
TEST_F(GpuPaths, TheDefaultInt8BackendIsTheWgmmaKernelOnHopperOnly) {
  ASSERT_EQ(int8_backend(), Int8Backend::automatic);
  const torch::Device gpu(torch::kCUDA, 0);
  const bool hopper = cuda::wgmma_supported();
  EXPECT_EQ(gemm_backends(parse_recipe("int8-tensor").gemms, gpu),
            hopper ? "lpbench-wgmma" : "cublaslt-int8+dequantize");
  EXPECT_EQ(gemm_backends(parse_recipe("int8-row").gemms, gpu),
            hopper ? "lpbench-wgmma" : "cublaslt-int8+dequantize");
  EXPECT_EQ(gemm_backends(parse_recipe("int8-block").gemms, gpu),
            hopper ? "lpbench-wgmma" : "lpbench-mma");
}

// The kernel suite records the wgmma kernel's config with each case it runs.
TEST_F(GpuPaths, TheWgmmaConfigIsNamedForTheOperandsItRuns) {
  torch::manual_seed(3);
  const at::Tensor x = torch::randn({4096, 1024}, torch::kCUDA).to(torch::kBFloat16);
  const at::Tensor w = torch::randn({2048, 1024}, torch::kCUDA).to(torch::kBFloat16);
  const Quantized a = kernels::quantize(x, QuantSpec{});
  const Quantized b = kernels::quantize(w, QuantSpec{});
  const std::string name = wgmma_config_name(a, b);
  if (!cuda::wgmma_supported()) {
    EXPECT_EQ(name, "");
    return;
  }
  const cuda::WgmmaProblem problem{4096, 2048, 1024, cuda::WgmmaScaling::tensor, cuda::DType::bf16,
                                   false};
  EXPECT_EQ(name, cuda::to_string(cuda::wgmma_config_for(problem)));
  EXPECT_NE(name.find("tile 128x"), std::string::npos) << name;
  EXPECT_EQ(wgmma_config_name(reference::quantize(x.cpu(), QuantSpec{}),
                              reference::quantize(w.cpu(), QuantSpec{})),
            "");
}

TEST_F(GpuPaths, Fp8RecipesAgreeWithTheReferenceWithinTheirAccumulation) {
  const Inputs in = inputs(2);
  for (const char* name : {"fp8-tensor", "fp8-row", "fp8-block"}) {
    const LinearGemms gemms = parse_recipe(name).gemms;
    const Results cpu = run(in, gemms, torch::kCPU);
    const Results gpu = run(in, gemms, torch::Device(torch::kCUDA, 0));
    // Same FP8 operands; the GPU accumulates in FP32-class precision where the reference sums
    // exactly: differences far below FP8's own rounding (~4 %).
    EXPECT_LT(relative_error(gpu.y, cpu.y), 5e-3) << name;
    EXPECT_LT(relative_error(gpu.grad_x, cpu.grad_x), 5e-3) << name;
    EXPECT_LT(relative_error(gpu.grad_w, cpu.grad_w), 5e-3) << name;
    std::cout << name << " runs on: " << gemm_backends(gemms, torch::Device(torch::kCUDA, 0))
              << "\n";
  }
}

// Blockwise FP8 (1×128 left, 128×128 or 1×128 right) runs on torch's scaled kernel on Hopper,
// not on the reference: for every pairing of fp8-block's products, at shapes whose K is no
// multiple of 128, whose rows are no multiple of the block (an MoE expert's routed tokens), and
// whose K blocks are no multiple of four (86 of them: llama2-7b's down projection, whose scales
// were read wrongly before they were padded).
TEST_F(GpuPaths, BlockwiseFp8RunsOnAGpuKernelOnHopperAtAnyShape) {
  if (!cuda::wgmma_supported()) GTEST_SKIP() << "blockwise FP8 through torch needs sm_90";
  torch::manual_seed(5);
  const torch::Device gpu(torch::kCUDA, 0);
  EXPECT_EQ(gemm_backends(parse_recipe("fp8-block").gemms, gpu), "torch-scaled-mm-blockwise");
  for (const int64_t rhs_block_rows : {int64_t{128}, int64_t{1}}) {
    for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{256, 384, 512},
                                  {37, 200, 328},
                                  {300, 128, 4096},
                                  {128, 256, 11008}}) {
      const at::Tensor x = torch::randn({m, k}, gpu).to(torch::kBFloat16);
      const at::Tensor w = torch::randn({n, k}, gpu).to(torch::kBFloat16);
      const Quantized a = kernels::quantize(x, {NumberFormat::fp8_e5m2, 1, 128});
      const Quantized b = kernels::quantize(w, {NumberFormat::fp8_e4m3, rhs_block_rows, 128});
      const std::string where = std::to_string(m) + "x" + std::to_string(n) + "x" +
                                std::to_string(k) + ", right blocks " +
                                std::to_string(rhs_block_rows) + "x128";
      EXPECT_EQ(scaled_gemm_backend(a, b, gpu), "torch-scaled-mm-blockwise") << where;
      const at::Tensor expected = reference::scaled_gemm(a, b, at::kFloat);
      EXPECT_LT(relative_error(kernels::scaled_gemm(a, b, at::kFloat), expected), 1e-3) << where;
      EXPECT_LT(relative_error(kernels::scaled_gemm(a, b, at::kBFloat16).to(at::kFloat), expected),
                5e-3)
          << where;
    }
  }
}

TEST_F(GpuPaths, EveryLevelRunsOnTheGpuWithFiniteOutputs) {
  workloads::TrainingOptions o;
  o.micro_batch = 2;
  o.seq_len = 64;
  o.total_steps = 3;
  o.lr = 1e-3;
  o.lr_warmup_steps = 1;
  for (const char* workload : {"gemm:tiny", "linear:tiny:down", "layer:tiny-moe", "model:tiny"}) {
    for (const char* recipe : {"bf16", "int8-tensor", "int8-block", "fp8-row"}) {
      const workloads::WorkloadSpec spec = workloads::parse_workload(workload);
      auto w = workloads::make_workload(spec, workloads::builtin_model(spec.model),
                                        parse_recipe(recipe), o, torch::Device(torch::kCUDA, 0));
      for (int64_t step = 0; step < o.total_steps; ++step) {
        const workloads::StepOutput out = w->step(step);
        EXPECT_TRUE(w->last_step_finite()) << workload << " " << recipe;
        if (out.loss) {
          EXPECT_TRUE(std::isfinite(*out.loss)) << workload << " " << recipe;
        }
      }
    }
  }
}

}  // namespace
}  // namespace lpbench::kernels
