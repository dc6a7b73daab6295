// lpbench's Hopper wgmma GEMM (kernels/cuda/wgmma_gemm.cu) against the reference
// (kernels/reference): the INT32 variant bit for bit against the exact integer product, the
// scaled variants bit for bit against the reference's scaled GEMM (the kernel follows its
// numerics: exact INT32 per K block, FP32 products and sums with separate roundings), with the
// relative error printed beside any mismatch. Shapes: llama2-7b's fprop, dgrad and wgrad at 4096
// tokens (a sample at 16384), edge sizes off the 128 × 128/256 tiles and the 128-deep K tile,
// K past the pipeline depth with several tiles per persistent CTA, and each tile width and a
// shallow ring forced through the config.
//
// The GPU tests skip without an sm_90 device; the argument checks and the heuristic run
// everywhere.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/wgmma_gemm.cuh"
#include "kernels/reference/int8_gemm.h"
#include "kernels/reference/scaled_gemm.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace lpbench::cuda {
namespace {

namespace ref = kernels::reference;
using kernels::NumberFormat;

class WgmmaGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!wgmma_supported()) GTEST_SKIP() << "not an sm_90 GPU: the wgmma GEMM runs on Hopper only";
  }
};

::testing::AssertionResult same_bits(const at::Tensor& expected, const at::Tensor& actual) {
  if (expected.sizes() != actual.sizes()) {
    return ::testing::AssertionFailure()
           << "shape " << actual.sizes() << ", expected " << expected.sizes();
  }
  const at::ScalarType bits = expected.element_size() == 2 ? at::kShort : at::kInt;
  const at::Tensor e = expected.contiguous().view(bits).to(actual.device());
  const at::Tensor a = actual.contiguous().view(bits);
  const at::Tensor diff = e.ne(a);
  const int64_t count = diff.sum().item<int64_t>();
  if (count == 0) return ::testing::AssertionSuccess();
  const int64_t first = diff.flatten().nonzero()[0].item<int64_t>();
  const int64_t cols = expected.size(-1);
  const at::Tensor ed = expected.to(actual.device()).to(at::kDouble);
  const at::Tensor ad = actual.to(at::kDouble);
  const double rel = ((ad - ed).norm() / ed.norm()).item<double>();
  return ::testing::AssertionFailure()
         << count << " of " << expected.numel() << " differ (relative error " << rel
         << "); first at [" << first / cols << ", " << first % cols << "]: got "
         << actual.flatten()[first].to(at::kDouble).item<double>() << ", expected "
         << expected.flatten()[first].to(at::kDouble).item<double>();
}

at::TensorOptions cuda_options() {
  return torch::TensorOptions().device(torch::kCUDA);
}

// ---- INT32 ----------------------------------------------------------------------------------

void check_int32(int64_t m, int64_t n, int64_t k, const WgmmaConfig* config = nullptr,
                 int low = -128, int high = 128) {
  WgmmaProblem problem{m, n, k, WgmmaScaling::none, DType::int32, false};
  const WgmmaConfig used = config ? *config : wgmma_config_for(problem);
  SCOPED_TRACE(to_string(problem) + " | " + to_string(used));
  const at::Tensor a = torch::randint(low, high, {m, k}, cuda_options().dtype(at::kChar));
  const at::Tensor b = torch::randint(low, high, {n, k}, cuda_options().dtype(at::kChar));
  at::Tensor c = torch::full({m, n}, 0x5eadbeef, cuda_options().dtype(at::kInt));  // poison
  wgmma_int8_gemm(a.data_ptr<int8_t>(), b.data_ptr<int8_t>(), c.data_ptr<int32_t>(), m, n, k,
                  nullptr, config);
  EXPECT_TRUE(same_bits(ref::int8_gemm(a, b), c));
}

std::vector<workloads::GemmShape> llama2_gemms(int64_t tokens) {
  std::vector<workloads::GemmShape> out;
  for (const workloads::LinearShape& l :
       workloads::linear_shapes(workloads::builtin_model("llama2-7b"))) {
    for (const auto& [kind, s] : workloads::training_gemms(l, tokens))
      out.push_back(s);
  }
  return out;
}

WgmmaConfig forced(int tile_n, int stages, int cluster_m = 1, bool pingpong = false) {
  WgmmaConfig c;
  c.tile_n = tile_n;
  c.stages = stages;
  c.cluster_m = cluster_m;
  c.pingpong = pingpong;
  return c;
}

// Ping-pong: each warpgroup its own 128 × 128 tiles, in turn.
WgmmaConfig pingpong(int stages, int cluster_m = 1) {
  return forced(128, stages, cluster_m, true);
}

TEST_F(WgmmaGemm, Int32IsExactOnLlama2TrainingGemms) {
  int64_t seed = 0;
  for (const workloads::GemmShape& s : llama2_gemms(4096)) {
    torch::manual_seed(++seed);
    check_int32(s.m, s.n, s.k);
  }
}

TEST_F(WgmmaGemm, Int32IsExactWithEveryTileWidthAndAShallowRing) {
  // 2048 × 2048: 256 (or 128) tiles over 132 SMs, so CTAs take several tiles and the ring's
  // phases run on across tiles; K = 17 tiles + 16 wraps a 2- and 3-stage ring many times.
  torch::manual_seed(11);
  // Clusters of two: 300 rows are 3 tile rows, so the last pair has a row past the edge.
  // Ping-pong with K shorter than the ring (3 tiles of K over 7 stages) and longer, and a
  // 2-stage ring that its two warpgroups' tiles wrap many times.
  for (const WgmmaConfig& c :
       {forced(128, 2), forced(128, 3), forced(256, 2), forced(256, 4),
        forced(128, wgmma_max_stages(128)), forced(128, 2, 2), forced(256, 4, 2), pingpong(2),
        pingpong(wgmma_max_stages(128, true)), pingpong(4, 2),
        pingpong(wgmma_max_stages(128, true), 2)}) {
    check_int32(2048, 2048, 128 * 17 + 16, &c);
    check_int32(300, 520, 1040, &c);
    check_int32(1024, 1024, 384, &c);  // K = 3 tiles: each warpgroup's tile inside the ring
  }
}

TEST_F(WgmmaGemm, Int32EdgeShapes) {
  // M and N off the 128 and 256 tiles (TMA zero-fills the rows past the edge), odd N (no paired
  // stores), K from one 16-byte step to just past a few 128-deep tiles.
  int64_t seed = 100;
  for (int64_t m : {1, 17, 128, 129, 300}) {
    for (int64_t n : {1, 8, 127, 130, 264}) {
      for (int64_t k : {16, 112, 128, 144, 400, 1040}) {
        torch::manual_seed(++seed);
        check_int32(m, n, k);
      }
    }
  }
  torch::manual_seed(7);
  for (const WgmmaConfig& c :
       {forced(256, 4), forced(256, 4, 2), forced(128, 4, 2), pingpong(7), pingpong(7, 2)}) {
    check_int32(129, 257, 400, &c);
    check_int32(1, 1, 16, &c);
    check_int32(300, 70, 144, &c);  // B's second half entirely past N
  }
}

TEST_F(WgmmaGemm, Int32AtTheOverflowBoundStaysExact) {
  // ±127 everywhere and K = 133136: |sum| up to K·127² = 2147350544, just below 2³¹.
  torch::manual_seed(12);
  check_int32(64, 96, 133136, nullptr, -127, 128);
  const at::Tensor a = torch::full({8, 133136}, 127, cuda_options().dtype(at::kChar));
  at::Tensor c = torch::zeros({8, 8}, cuda_options().dtype(at::kInt));
  wgmma_int8_gemm(a.data_ptr<int8_t>(), a.data_ptr<int8_t>(), c.data_ptr<int32_t>(), 8, 8, 133136,
                  nullptr);
  EXPECT_EQ(c.min().item<int64_t>(), int64_t{133136} * 127 * 127);
  EXPECT_EQ(c.max().item<int64_t>(), int64_t{133136} * 127 * 127);
}

// ---- scaled ---------------------------------------------------------------------------------

struct ScaledCase {
  int64_t m = 0, n = 0, k = 0;
  WgmmaScaling mode = WgmmaScaling::tensor;
  int64_t b_block_rows = 128;  // block mode: 128 (weights) or 1 (wgrad's activations)
  DType c_type = DType::bf16;
  bool bias = false;
  bool accumulate = false;  // FP32 C holding values that the product adds into
  int64_t kblock = 128;     // block mode: the K block (int8-block:k-block=<kb>)
  // A all −128, B's rows all −128 and all 127 in turn: each K block's partial is ±kb·128·128 or
  // −kb·128·127, the largest magnitudes INT8 operands can give.
  bool extreme = false;
  int64_t c_offset = 0;  // C starts this many elements into its allocation (alignment cases)
};

std::string describe(const ScaledCase& g) {
  return std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) + " " +
         to_string(g.mode) +
         (g.mode == WgmmaScaling::block ? "(b " + std::to_string(g.b_block_rows) + ", K block " +
                                              std::to_string(g.kblock) + ")"
                                        : "") +
         " -> " + dtype_name(g.c_type) + (g.bias ? " +bias" : "") +
         (g.accumulate ? " (into C)" : "") + (g.extreme ? " (extreme values)" : "") +
         (g.c_offset != 0 ? " (C at +" + std::to_string(g.c_offset) + ")" : "");
}

// Random INT8 operands and positive scales over several binades, laid out as the recipes'
// quantizers lay them out; the kernel's output next to the reference's.
struct ScaledRun {
  at::Tensor got, want;
};

ScaledRun run_scaled(const ScaledCase& g, const WgmmaConfig* config, bool cpu_reference = false) {
  const auto opts = cuda_options();
  const bool blocked = g.mode == WgmmaScaling::block;
  const int64_t kblock = blocked ? g.kblock : 0;
  const int64_t kb = blocked ? (g.k + kblock - 1) / kblock : 1;
  const int64_t abr = g.mode == WgmmaScaling::tensor ? 0 : 1;
  const int64_t bbr =
      g.mode == WgmmaScaling::tensor ? 0 : (g.mode == WgmmaScaling::row ? 1 : g.b_block_rows);
  auto scales = [&](int64_t rows, int64_t br) {
    const int64_t n = br == 0 ? 1 : (rows + br - 1) / br;
    return torch::exp(torch::randn({n, kb}, opts)) * 1e-3;
  };
  const auto values = [&](int64_t rows, bool rows_alternate) {
    if (!g.extreme) return torch::randint(-127, 128, {rows, g.k}, opts.dtype(at::kChar));
    at::Tensor v = torch::full({rows, g.k}, -128, opts.dtype(at::kChar));
    if (rows_alternate) v.index_put_({torch::indexing::Slice(1, torch::indexing::None, 2)}, 127);
    return v;
  };
  const ref::Quantized a{values(g.m, false), scales(g.m, abr), {NumberFormat::int8, abr, kblock}};
  const ref::Quantized b{values(g.n, true), scales(g.n, bbr), {NumberFormat::int8, bbr, kblock}};
  const at::Tensor bias = g.bias ? torch::randn({g.n}, opts) : at::Tensor();
  const at::ScalarType out = g.c_type == DType::bf16 ? at::kBFloat16 : at::kFloat;
  at::Tensor c = torch::full({g.m * g.n + g.c_offset}, std::numeric_limits<float>::quiet_NaN(),
                             opts.dtype(out))
                     .narrow(0, g.c_offset, g.m * g.n)
                     .view({g.m, g.n});
  // Adding into C: what it held before, over magnitudes from below the product's to above.
  const at::Tensor before =
      g.accumulate ? torch::randn({g.m, g.n}, opts) * torch::exp(2 * torch::randn({g.m, g.n}, opts))
                   : at::Tensor();
  if (g.accumulate) c.copy_(before);
  ScaledGemmArgs args;
  args.a = a.values.data_ptr();
  args.b = b.values.data_ptr();
  args.m = g.m;
  args.n = g.n;
  args.k = g.k;
  args.a_scales = a.scales.data_ptr<float>();
  args.a_block_rows = abr;
  args.b_scales = b.scales.data_ptr<float>();
  args.b_block_rows = bbr;
  args.kblock = kblock;
  args.bias = g.bias ? bias.data_ptr<float>() : nullptr;
  args.c = c.data_ptr();
  args.c_type = g.c_type;
  args.accumulate = g.accumulate;
  wgmma_scaled_gemm(args, nullptr, config);
  if (g.accumulate) {
    // The definition: the product as it would be stored, then one FP32 add.
    return {c, before + ref::scaled_gemm(a, b, out, bias)};
  }
  if (cpu_reference) {
    const ref::Quantized ac{a.values.cpu(), a.scales.cpu(), a.spec};
    const ref::Quantized bc{b.values.cpu(), b.scales.cpu(), b.spec};
    return {c, ref::scaled_gemm(ac, bc, out, g.bias ? bias.cpu() : at::Tensor())};
  }
  return {c, ref::scaled_gemm(a, b, out, bias)};
}

void check_scaled(const ScaledCase& g, const WgmmaConfig* config = nullptr) {
  ScaledGemmArgs probe;
  probe.m = g.m;
  probe.n = g.n;
  probe.k = g.k;
  probe.kblock = g.mode == WgmmaScaling::block ? g.kblock : 0;
  probe.a_block_rows = g.mode == WgmmaScaling::tensor ? 0 : 1;
  probe.b_block_rows = probe.a_block_rows;
  const WgmmaConfig used = config ? *config : wgmma_config_for(wgmma_problem(probe));
  SCOPED_TRACE(describe(g) + " | " + to_string(used));
  const ScaledRun r = run_scaled(g, config);
  EXPECT_TRUE(same_bits(r.want, r.got));
}

TEST_F(WgmmaGemm, ScaledMatchesTheReferenceOnLlama2TrainingGemms) {
  // Each GEMM in block mode (B's scales 128×128 for the weights of fprop and dgrad, 1×128 for
  // the activations of wgrad) and in tensor or row mode in turn, outputs and bias in turn.
  int64_t i = 0;
  for (const auto& l : workloads::linear_shapes(workloads::builtin_model("llama2-7b"))) {
    for (const auto& [kind, s] : workloads::training_gemms(l, 4096)) {
      SCOPED_TRACE(l.part + " " + std::string(kernels::to_string(kind)));
      torch::manual_seed(++i);
      const int64_t bbr = kind == kernels::GemmKind::wgrad ? 1 : 128;
      const DType c_type = i % 2 ? DType::bf16 : DType::fp32;
      check_scaled({s.m, s.n, s.k, WgmmaScaling::block, bbr, c_type, i % 3 == 0});
      check_scaled(
          {s.m, s.n, s.k, i % 2 ? WgmmaScaling::row : WgmmaScaling::tensor, 0, c_type, i % 3 == 1});
    }
  }
}

// int8-block:k-block=<kb>: weights in kb × kb blocks (fprop, dgrad), activations 1 × kb (wgrad's
// B), one fold per kb / 128 stages.
TEST_F(WgmmaGemm, LongerKBlocksMatchTheReferenceOnLlama2TrainingGemms) {
  int64_t i = 0;
  for (int64_t kblock : {256, 512, 1024}) {
    for (const auto& l : workloads::linear_shapes(workloads::builtin_model("llama2-7b"))) {
      for (const auto& [kind, s] : workloads::training_gemms(l, 4096)) {
        SCOPED_TRACE(l.part + " " + std::string(kernels::to_string(kind)));
        torch::manual_seed(300 + ++i);
        const int64_t bbr = kind == kernels::GemmKind::wgrad ? 1 : kblock;
        const DType c_type = i % 2 ? DType::bf16 : DType::fp32;
        check_scaled({s.m, s.n, s.k, WgmmaScaling::block, bbr, c_type, false,
                      c_type == DType::fp32 && i % 3 == 0, kblock});
      }
    }
  }
}

TEST_F(WgmmaGemm, LongerKBlocksEdgeShapes) {
  // K ending inside a block (a ragged last block of fewer stages), M and N off the tile, forced
  // rings and clusters, bias, BF16 and FP32 out.
  int64_t i = 0;
  for (int64_t kblock : {256, 512, 1024}) {
    for (int64_t k : {16, 400, 1008, 2064}) {
      for (const WgmmaConfig& c :
           {forced(128, 2), forced(128, 3), forced(128, 6), forced(128, 4, 2)}) {
        torch::manual_seed(300 + ++i);
        const int64_t bbr = i % 2 ? 1 : kblock;
        check_scaled({300, 264, k, WgmmaScaling::block, bbr, i % 3 ? DType::bf16 : DType::fp32,
                      i % 4 == 0, false, kblock},
                     &c);
      }
    }
    // Several tiles a CTA, each ending in a ragged block: the column buffers' parity and the
    // ring's phases carry from one tile to the next.
    for (const WgmmaConfig& c : {forced(128, 3), forced(128, 5, 2)}) {
      torch::manual_seed(300 + ++i);
      check_scaled({2048, 2304, kblock * 2 + 400, WgmmaScaling::block, i % 2 ? 1 : kblock,
                    DType::bf16, false, false, kblock},
                   &c);
    }
  }
}

// Block mode's fold at the largest partials INT8 operands can make (kb·128·128: 2²² at 256),
// where a conversion exact only within a narrower range would show (docs/perf-log.md §31).
TEST_F(WgmmaGemm, BlockFoldIsExactAtTheLargestPartials) {
  int64_t i = 0;
  for (int64_t kblock : {128, 256, 512}) {
    for (int64_t bbr : {int64_t{1}, kblock}) {
      torch::manual_seed(400 + ++i);
      check_scaled({256, 384, 2 * kblock + 128, WgmmaScaling::block, bbr,
                    i % 2 ? DType::bf16 : DType::fp32, false, false, kblock, true});
    }
  }
}

TEST_F(WgmmaGemm, ScaledAtSixteenThousandTokens) {
  torch::manual_seed(200);
  check_scaled({16384, 11008, 4096, WgmmaScaling::block, 128, DType::bf16, false});
  check_scaled({4096, 11008, 16384, WgmmaScaling::block, 1, DType::bf16, false});
  check_scaled({16384, 4096, 4096, WgmmaScaling::tensor, 0, DType::bf16, false});
}

TEST_F(WgmmaGemm, ScaledEdgeShapesEveryModeAndConfig) {
  int64_t i = 0;
  for (int64_t m : {1, 17, 129, 300}) {
    for (int64_t n : {1, 8, 127, 130, 264}) {
      for (int64_t k : {16, 128, 144, 400}) {
        for (WgmmaScaling mode : {WgmmaScaling::tensor, WgmmaScaling::row, WgmmaScaling::block}) {
          torch::manual_seed(++i);
          const int64_t bbr = std::vector<int64_t>{128, 1, 32, 0}[i % 4];
          check_scaled({m, n, k, mode, bbr, i % 2 ? DType::bf16 : DType::fp32, i % 3 == 0});
        }
      }
    }
  }
  // Forced configs: both tile widths, shallow and deep rings, several tiles per CTA.
  for (const WgmmaConfig& c :
       {forced(128, 2), forced(128, 6), forced(256, 2), forced(256, 4), forced(128, 4, 2),
        forced(256, 4, 2), pingpong(3), pingpong(7), pingpong(7, 2)}) {
    for (WgmmaScaling mode : {WgmmaScaling::tensor, WgmmaScaling::row, WgmmaScaling::block}) {
      if (mode == WgmmaScaling::block && (c.tile_n == 256 || c.stages > 6 || c.pingpong)) {
        continue;
      }
      torch::manual_seed(++i);
      check_scaled({2048, 2304, 128 * 9 + 16, mode, 128, DType::bf16, true}, &c);
      check_scaled({130, 300, 272, mode, 1, DType::fp32, false}, &c);
    }
  }
}

TEST_F(WgmmaGemm, InteriorTilesStoreTheSameBitsAlignedForQuadsOrNot) {
  // Whole tiles of BF16 and FP32 C are stored four columns a lane where C is aligned for four
  // (8 or 16 bytes) and N a multiple of 4, and by the general path's pairs otherwise: N ≡ 2
  // mod 4, C at +2 elements (BF16: 4 bytes, FP32: 8), C at +4 (both aligned again).
  int64_t i = 500;
  const std::vector<std::pair<int64_t, int64_t>> n_and_offset = {
      {1024, 0}, {1030, 0}, {1024, 2}, {1024, 4}};
  for (const WgmmaConfig& c :
       {forced(128, 4), forced(256, 4), forced(128, 4, 2), pingpong(6), pingpong(6, 2)}) {
    for (WgmmaScaling mode : {WgmmaScaling::tensor, WgmmaScaling::row, WgmmaScaling::block}) {
      if (mode == WgmmaScaling::block && (c.tile_n == 256 || c.pingpong)) continue;
      for (DType c_type : {DType::bf16, DType::fp32}) {
        for (const auto& [n, offset] : n_and_offset) {
          torch::manual_seed(++i);
          ScaledCase g{1024, n, 400, mode, 128, c_type};
          g.c_offset = offset;
          check_scaled(g, &c);
        }
      }
    }
  }
}

TEST_F(WgmmaGemm, ScaledMatchesTheCpuReference) {
  // The definition itself, run on the CPU, for one case per mode.
  int64_t i = 300;
  // Block mode twice: B's scales over 128-row blocks (weights) and per row (wgrad's activations,
  // which the kernel copies K-block-major and brings in by TMA).
  const std::vector<std::pair<WgmmaScaling, int64_t>> cases = {{WgmmaScaling::tensor, 128},
                                                               {WgmmaScaling::row, 128},
                                                               {WgmmaScaling::block, 128},
                                                               {WgmmaScaling::block, 1}};
  for (const auto& [mode, bbr] : cases) {
    torch::manual_seed(++i);
    const ScaledCase g{257, 390, 528, mode, bbr, DType::bf16, true};
    SCOPED_TRACE(describe(g));
    const ScaledRun r = run_scaled(g, nullptr, /*cpu_reference=*/true);
    EXPECT_TRUE(same_bits(r.want, r.got));
  }
}

TEST_F(WgmmaGemm, AddsIntoCAsTheProductPlusOneAdd) {
  // The wgrad products at 4096 tokens (each mode, B per row in block mode as the activations
  // are), then shapes off the tiles through every config, so that both the interior epilogue
  // and the general one (bounds, bias) add.
  int64_t i = 400;
  for (const auto& l : workloads::linear_shapes(workloads::builtin_model("llama2-7b"))) {
    const workloads::GemmShape s = workloads::training_gemms(l, 4096).back().second;
    for (WgmmaScaling mode : {WgmmaScaling::tensor, WgmmaScaling::row, WgmmaScaling::block}) {
      torch::manual_seed(++i);
      check_scaled({s.m, s.n, s.k, mode, 1, DType::fp32, false, true});
    }
  }
  for (const WgmmaConfig& c :
       {forced(128, 4), forced(256, 4), forced(128, 4, 2), pingpong(6), pingpong(6, 2)}) {
    for (WgmmaScaling mode : {WgmmaScaling::tensor, WgmmaScaling::row, WgmmaScaling::block}) {
      if (mode == WgmmaScaling::block && (c.tile_n == 256 || c.pingpong)) continue;
      for (const int64_t bbr : {1, 128}) {
        torch::manual_seed(++i);
        check_scaled({1030, 772, 400, mode, bbr, DType::fp32, i % 2 == 0, true}, &c);
      }
    }
  }
}

// ---- arguments, configs and the heuristic: no GPU needed ------------------------------------

ScaledGemmArgs valid_args() {
  alignas(16) static char fake[16];
  ScaledGemmArgs a;
  a.a = a.b = fake;
  a.m = a.n = 256;
  a.k = 512;
  a.a_scales = a.b_scales = reinterpret_cast<const float*>(fake);
  a.c = fake;
  return a;
}

std::string refusal(const ScaledGemmArgs& args, const WgmmaConfig* config = nullptr) {
  try {
    wgmma_scaled_gemm(args, nullptr, config);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(WgmmaGemmArgs, RefusesWhatItCannotRunWithAClearReason) {
  auto with = [](auto change) {
    ScaledGemmArgs a = valid_args();
    change(a);
    return a;
  };
  EXPECT_NE(refusal(with([](ScaledGemmArgs& a) { a.k = 40; })).find("multiple of 16"),
            std::string::npos);
  EXPECT_NE(refusal(with([](ScaledGemmArgs& a) { a.k = 130; })).find("K=130"), std::string::npos);
  EXPECT_NE(refusal(with([](ScaledGemmArgs& a) { a.kblock = 64; })).find("kblock"),
            std::string::npos);
  EXPECT_NE(refusal(with([](ScaledGemmArgs& a) { a.kblock = 2048; })).find("kblock"),
            std::string::npos);
  EXPECT_NE(refusal(with([](ScaledGemmArgs& a) { a.k = 133152; })).find("overflow"),
            std::string::npos);
  EXPECT_NE(refusal(with([](ScaledGemmArgs& a) {
              a.a = static_cast<const char*>(a.a) + 1;
            })).find("aligned"),
            std::string::npos);
  EXPECT_FALSE(refusal(with([](ScaledGemmArgs& a) { a.ab_type = DType::fp8_e4m3; })).empty());
  EXPECT_FALSE(refusal(with([](ScaledGemmArgs& a) { a.c_type = DType::int32; })).empty());
  EXPECT_FALSE(refusal(with([](ScaledGemmArgs& a) { a.b_scales = nullptr; })).empty());
  EXPECT_FALSE(refusal(with([](ScaledGemmArgs& a) { a.m = 0; })).empty());
  EXPECT_FALSE(refusal(with([](ScaledGemmArgs& a) { a.c = nullptr; })).empty());
  EXPECT_NE(refusal(with([](ScaledGemmArgs& a) { a.accumulate = true; })).find("FP32 C"),
            std::string::npos);
  // Configs: block scaling takes 128-wide tiles only; stages within shared memory; clusters of
  // one or two CTAs along M.
  const ScaledGemmArgs block = with([](ScaledGemmArgs& a) { a.kblock = 128; });
  const WgmmaConfig wide = forced(256, 4);
  EXPECT_NE(refusal(block, &wide).find("tile_n 128"), std::string::npos);
  const WgmmaConfig deep = forced(128, 40);
  EXPECT_NE(refusal(valid_args(), &deep).find("stages"), std::string::npos);
  for (const auto& [cm, cn] : std::vector<std::pair<int, int>>{{4, 1}, {1, 2}, {0, 1}}) {
    WgmmaConfig cluster = forced(128, 4);
    cluster.cluster_m = cm;
    cluster.cluster_n = cn;
    EXPECT_NE(refusal(valid_args(), &cluster).find("cluster"), std::string::npos);
  }
  const WgmmaConfig pair = forced(128, 4, 2);
  EXPECT_TRUE(wgmma_config_error(wgmma_problem(valid_args()), pair).empty());
  // Ping-pong: 128-wide tiles without block scaling (a warpgroup holds a whole tile).
  EXPECT_TRUE(wgmma_config_error(wgmma_problem(valid_args()), pingpong(6, 2)).empty());
  const WgmmaConfig pingpong4 = pingpong(4);
  EXPECT_NE(refusal(block, &pingpong4).find("ping-pong"), std::string::npos);
  const WgmmaConfig wide_pingpong = forced(256, 4, 1, true);
  EXPECT_NE(refusal(valid_args(), &wide_pingpong).find("ping-pong"), std::string::npos);
  // Its ring holds 7 stages, the cooperative 128-wide tile's 6.
  EXPECT_TRUE(wgmma_config_error(wgmma_problem(valid_args()), pingpong(7)).empty());
  const WgmmaConfig cooperative7 = forced(128, 7), pingpong8 = pingpong(8);
  EXPECT_NE(refusal(valid_args(), &cooperative7).find("[2, 6]"), std::string::npos);
  EXPECT_NE(refusal(valid_args(), &pingpong8).find("[2, 7] for tile_n 128 in ping-pong"),
            std::string::npos);
  // The INT32 variant checks the same way.
  alignas(16) static int8_t op[16];
  alignas(16) static int32_t out[4];
  EXPECT_THROW(wgmma_int8_gemm(op, op, out, 4, 4, 24, nullptr), std::invalid_argument);
  EXPECT_THROW(wgmma_int8_gemm(op, op, nullptr, 4, 4, 32, nullptr), std::invalid_argument);
}

TEST(WgmmaGemmArgs, HeuristicPicksWideTilesForLargeUnblockedProblems) {
  // K of 96 tiles or more: 128 × 256 tiles split by the two warpgroups.
  const WgmmaProblem big{16384, 4096, 12288, WgmmaScaling::tensor, DType::bf16, false};
  const WgmmaConfig c = select_wgmma_config(big, 132);
  EXPECT_EQ(c.tile_n, 256);
  EXPECT_FALSE(c.pingpong);
  EXPECT_EQ(c.stages, wgmma_max_stages(256));
  EXPECT_TRUE(wgmma_config_error(big, c).empty());
  WgmmaProblem blocked = big;
  blocked.scaling = WgmmaScaling::block;
  const WgmmaConfig cb = select_wgmma_config(blocked, 132);
  EXPECT_EQ(cb.tile_n, 128);
  EXPECT_TRUE(wgmma_config_error(blocked, cb).empty());
  // Too few 256-wide tiles to fill 132 SMs: 128-wide ones, at most 4 stages (measured best).
  const WgmmaProblem mid{1024, 4096, 4096, WgmmaScaling::tensor, DType::bf16, false};
  const WgmmaConfig cm = select_wgmma_config(mid, 132);
  EXPECT_EQ(cm.tile_n, 128);
  EXPECT_EQ(cm.stages, 4);
  EXPECT_EQ(cb.stages, 4);
  const WgmmaProblem small{256, 512, 256, WgmmaScaling::row, DType::fp32, true};
  const WgmmaConfig cs = select_wgmma_config(small, 132);
  EXPECT_EQ(cs.tile_n, 128);
  EXPECT_EQ(cs.stages, 2);
  EXPECT_TRUE(wgmma_config_error(small, cs).empty());
  // Shared memory: the 128-wide ring holds more stages than the 256-wide one, which holds at
  // least 4.
  EXPECT_GE(wgmma_max_stages(256), 4);
  EXPECT_GT(wgmma_max_stages(128), wgmma_max_stages(256));
  EXPECT_EQ(to_string(big), "16384x4096x12288 tensor -> bf16");
  EXPECT_EQ(to_string(c), "tile 128x256x128, 4 stages, cluster 1x1, 2 consumer warpgroups");
  // Shorter K with two 128 × 128 tiles per SM or more: ping-pong on a 6-stage ring (7 fit, and
  // measured slower), in every unblocked mode; block scaling keeps its cooperative tile; one tile
  // per SM does not.
  for (const WgmmaScaling mode : {WgmmaScaling::tensor, WgmmaScaling::row, WgmmaScaling::none}) {
    const DType out = mode == WgmmaScaling::none ? DType::int32 : DType::bf16;
    const WgmmaProblem short_k{4096, 11008, 11008, mode, out, false};
    const WgmmaConfig cp = select_wgmma_config(short_k, 132);
    EXPECT_TRUE(cp.pingpong) << to_string(short_k);
    EXPECT_EQ(cp.tile_n, 128);
    EXPECT_EQ(cp.stages, 6);
    EXPECT_TRUE(wgmma_config_error(short_k, cp).empty());
  }
  EXPECT_FALSE(select_wgmma_config(blocked, 132).pingpong);
  const WgmmaProblem one_wave{2048, 1024, 4096, WgmmaScaling::tensor, DType::bf16, false};
  EXPECT_FALSE(select_wgmma_config(one_wave, 132).pingpong);
  EXPECT_EQ(to_string(select_wgmma_config({4096, 4096, 4096, WgmmaScaling::tensor}, 132)),
            "tile 128x128x128, 6 stages, cluster 1x1, 2 consumer warpgroups (ping-pong)");
  // Ping-pong never stages block mode's per-column B scales (512 bytes a stage): its ring of
  // 32 KiB stages takes a seventh, one more than the cooperative 128-wide tile's.
  EXPECT_EQ(wgmma_max_stages(128, true), 7);
  EXPECT_EQ(wgmma_max_stages(128), 6);
}

}  // namespace
}  // namespace lpbench::cuda
