// lpbench's CUDA kernels (kernels/cuda) against the reference (kernels/reference), bit for bit:
// INT8 and FP8 values as bytes, scales as FP32 bit patterns (NaN scales by isnan), INT8 GEMM
// outputs as BF16/FP32 bit patterns. Shapes: every linear layer of the seed models (fprop, dgrad
// and wgrad at 4096 tokens, a few at 16384), and edge sizes off the kernels' tiles and vectors.
//
// The reference runs on the GPU for speed (plain torch ops), with one known difference from its
// CPU run: ATen's CUDA division by a CPU scalar multiplies by the reciprocal, so `amax / fmax`
// there differs from the IEEE quotient in the last bit for some amaxes (seen on an H100: 4% of
// random values for 127, 55% for 448 and 57344; `fmax / amax` matched). The expected scales are
// therefore computed on the CPU from the block amaxes, and GpuReferenceValuesMatchTheCpuReference
// holds the GPU run's values to the CPU run.
//
// Without a CUDA device the GPU tests skip; the argument checks run everywhere.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/quantize.cuh"
#include "kernels/cuda/quantize_hadamard.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/saved_activation.cuh"
#include "kernels/cuda/scaled_gemm.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/reference/int8_gemm.h"
#include "kernels/reference/quantize.h"
#include "kernels/reference/scaled_gemm.h"
#include "tests/support/bit_compare.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace lpbench::cuda {
namespace {

namespace ref = kernels::reference;
using kernels::NumberFormat;

const std::vector<std::string> kSeedModels = {"llama2-7b", "llama2-13b",  "qwen3-4b",
                                              "qwen3-8b",  "llama3.1-8b", "mixtral-8x7b-8l"};
constexpr int64_t kTokens = 4096;
constexpr DType kFormats[] = {DType::int8, DType::fp8_e4m3, DType::fp8_e5m2};

NumberFormat number_format(DType t) {
  return t == DType::int8
             ? NumberFormat::int8
             : (t == DType::fp8_e4m3 ? NumberFormat::fp8_e4m3 : NumberFormat::fp8_e5m2);
}

at::ScalarType torch_type(DType t) {
  return t == DType::bf16 ? at::kBFloat16 : at::kFloat;
}

DType dtype_of(const at::Tensor& x) {
  return x.scalar_type() == at::kBFloat16 ? DType::bf16 : DType::fp32;
}

class GpuKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) {
      GTEST_SKIP() << "no CUDA device: the CUDA kernels are checked on a GPU machine";
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------

using test_support::same_bits;
using test_support::same_scales;

// ---------------------------------------------------------------------------------------------
// Quantize
// ---------------------------------------------------------------------------------------------

struct QuantCase {
  bool transpose = false;
  DType out = DType::int8;
  int64_t br = 0, bc = 0;   // output coordinates, 0: the whole dimension
  bool stochastic = false;  // INT8 only; the noise drawn with `seed`
  uint64_t seed = 0;
  const uint32_t* amax = nullptr;  // a producer's max |x| (tensorwise), on the device
  bool tile_kernel = false;        // QuantizeArgs::tile_kernel
  bool copy_rowwise = false;       // QuantizeArgs::copy_rowwise (with the transposed copy)
};

std::string describe(const at::Tensor& x, const QuantCase& c) {
  return std::string(dtype_name(dtype_of(x))) + " [" + std::to_string(x.size(0)) + "x" +
         std::to_string(x.size(1)) + ", ld " + std::to_string(x.stride(0)) + "]" +
         (c.transpose ? "ᵀ" : "") + " -> " + dtype_name(c.out) + " blocks {" +
         std::to_string(c.br) + "," + std::to_string(c.bc) + "}";
}

struct KernelQuant {
  at::Tensor values;              // uint8 [R, C]
  at::Tensor scales;              // fp32
  at::Tensor values_t, scales_t;  // the transposed copy, when asked for
};

// With `with_transpose`, the kernel also writes the transposed copy (QuantizeArgs::values_t).
KernelQuant run_quantize(const at::Tensor& x, const QuantCase& c, bool with_transpose = false) {
  const int64_t rows = x.size(0);
  const int64_t cols = x.size(1);
  const int64_t out_rows = c.transpose ? cols : rows;
  const int64_t out_cols = c.transpose ? rows : cols;
  const int64_t br = c.br > 0 ? std::min(c.br, out_rows) : out_rows;
  const int64_t bc = c.bc > 0 ? std::min(c.bc, out_cols) : out_cols;
  const auto cuda = x.options();
  // Poison: bytes the kernel never writes (INT8 is symmetric, so never -128; FP8 values are
  // never NaN, 0x7f in both formats) and negative scales.
  KernelQuant k{
      torch::full({out_rows, out_cols}, c.out == DType::int8 ? 0x80 : 0x7f, cuda.dtype(at::kByte)),
      torch::full({(out_rows + br - 1) / br, (out_cols + bc - 1) / bc}, -1.0F,
                  cuda.dtype(at::kFloat))};
  QuantizeArgs args;
  args.x = x.data_ptr();
  args.x_type = dtype_of(x);
  args.rows = rows;
  args.cols = cols;
  args.ld = x.stride(0);
  args.transpose = c.transpose;
  args.out_type = c.out;
  args.block_rows = c.br;
  args.block_cols = c.bc;
  args.stochastic = c.stochastic;
  args.seed = c.seed;
  args.amax = c.amax;
  args.tile_kernel = c.tile_kernel;
  args.values = k.values.data_ptr();
  args.scales = k.scales.data_ptr<float>();
  if (with_transpose) {
    k.values_t = torch::full({out_cols, out_rows}, c.out == DType::int8 ? 0x80 : 0x7f,
                             cuda.dtype(at::kByte));
    k.scales_t = c.copy_rowwise ? torch::full({out_cols, 1}, -1.0F, cuda.dtype(at::kFloat))
                                : torch::full({(out_cols + bc - 1) / bc, (out_rows + br - 1) / br},
                                              -1.0F, cuda.dtype(at::kFloat));
    args.values_t = k.values_t.data_ptr();
    args.scales_t = k.scales_t.data_ptr<float>();
    args.copy_rowwise = c.copy_rowwise;
  }
  const size_t ws_bytes = quantize_workspace_bytes(args);
  const at::Tensor ws =
      torch::full({static_cast<int64_t>(ws_bytes) + 16}, 0xff, cuda.dtype(at::kByte));
  args.workspace = ws_bytes > 0 ? ws.data_ptr() : nullptr;
  quantize(args, nullptr);
  return k;
}

// The reference's values (computed on the GPU) and scales (on the CPU, from the block amaxes:
// quantizing each amax as its own 1×1 block gives exactly the reference's amax / fmax).
KernelQuant expected_quantize(const at::Tensor& x, const QuantCase& c) {
  const at::Tensor src = c.transpose ? x.t().contiguous() : x;
  const NumberFormat fmt = number_format(c.out);
  const kernels::Rounding rounding =
      c.stochastic ? kernels::Rounding::stochastic : kernels::Rounding::nearest;
  const ref::Quantized q = ref::quantize(src, {fmt, c.br, c.bc, rounding}, c.seed);
  const at::Tensor amax = ref::block_absmax(src, c.br, c.bc).to(at::kCPU);
  return {q.values.view(at::kByte), ref::quantize(amax, {fmt, 1, 1}).scales};
}

// Checks the kernel's output, and wherever the spec allows it (untransposed, square blocks)
// also the same call writing the transposed copy: both outputs against the reference's
// quantization of X and of Xᵀ.
void check_quantize(const at::Tensor& x, const QuantCase& c) {
  SCOPED_TRACE(describe(x, c));
  const KernelQuant want = expected_quantize(x, c);
  const KernelQuant got = run_quantize(x, c);
  EXPECT_TRUE(same_scales(want.scales, got.scales)) << "scales";
  EXPECT_TRUE(same_bits(want.values, got.values)) << "values";
  if (c.transpose || !quantize_writes_transpose_too(c.br, c.bc)) return;
  const KernelQuant want_t = expected_quantize(x, {true, c.out, c.br, c.bc});
  const KernelQuant both = run_quantize(x, c, /*with_transpose=*/true);
  EXPECT_TRUE(same_scales(want.scales, both.scales)) << "scales, with the transposed copy";
  EXPECT_TRUE(same_bits(want.values, both.values)) << "values, with the transposed copy";
  EXPECT_TRUE(same_scales(want_t.scales, both.scales_t)) << "the transposed copy's scales";
  EXPECT_TRUE(same_bits(want_t.values, both.values_t)) << "the transposed copy's values";
}

// Random values whose magnitude varies by row and by column (outlier channels), so that blocks
// have different scales; `ld` > cols leaves a gap after each row.
at::Tensor random_matrix(int64_t rows, int64_t cols, DType type, int64_t ld = 0) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const at::Tensor v = torch::randn({rows, cols}, opts) *
                       torch::exp(torch::randn({rows, 1}, opts)) *
                       torch::exp(2 * torch::randn({1, cols}, opts));
  if (ld <= cols) return v.to(torch_type(type));
  at::Tensor storage = torch::full({rows, ld}, std::numeric_limits<float>::quiet_NaN(),
                                   opts.dtype(torch_type(type)));
  at::Tensor view = storage.narrow(1, 0, cols);
  view.copy_(v);
  return view;
}

const std::vector<std::pair<int64_t, int64_t>> kGranularities = {
    {0, 0}, {1, 0}, {1, 128}, {128, 128}, {32, 32}};

TEST_F(GpuKernels, QuantizeEveryLinearShapeOfTheSeedModels) {
  // X [T, in] (fprop A; Xᵀ is wgrad's B), W [out, in] (fprop B; Wᵀ is dgrad's B), dY [T, out]
  // (dgrad A; dYᵀ is wgrad's A), each in the granularities its GEMMs use, formats in turn.
  std::set<std::pair<int64_t, int64_t>> seen;
  int64_t seed = 0;
  for (const std::string& name : kSeedModels) {
    for (const workloads::LinearShape& l :
         workloads::linear_shapes(workloads::builtin_model(name))) {
      SCOPED_TRACE(name + " " + l.part);
      if (!seen.insert({l.in_features, l.out_features}).second) continue;
      auto fmt = [&] { return kFormats[seed % 3]; };
      torch::manual_seed(++seed);
      const at::Tensor x = random_matrix(kTokens, l.in_features, DType::bf16);
      for (auto [br, bc] : std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {1, 128}, {0, 0}}) {
        check_quantize(x, {false, fmt(), br, bc});
        check_quantize(x, {true, fmt(), br, bc});
        ++seed;
      }
      torch::manual_seed(++seed);
      const at::Tensor w =
          random_matrix(l.out_features, l.in_features, seed % 2 ? DType::fp32 : DType::bf16);
      for (auto [br, bc] : std::vector<std::pair<int64_t, int64_t>>{{128, 128}, {1, 0}}) {
        check_quantize(w, {false, fmt(), br, bc});
        check_quantize(w, {true, fmt(), br, bc});
        ++seed;
      }
      torch::manual_seed(++seed);
      const at::Tensor dy = random_matrix(kTokens, l.out_features, DType::bf16);
      check_quantize(dy, {false, fmt(), 1, 128});
      check_quantize(dy, {true, fmt(), 1, 128});
      check_quantize(dy, {false, fmt(), 0, 0});  // with its transposed copy (int8-tensor)
    }
  }
}

TEST_F(GpuKernels, QuantizeLongRowBlocks) {
  // int8-block:k-block=<kb>'s activations and gradients: 1 × kb blocks along each row, on the
  // segments kernel (one warp a block) where the rows are aligned, BF16 and FP32, rows whose last
  // block is shorter, a leading dimension with a gap; the transposed layout (wgrad's) beside it,
  // on the columns kernel for BF16: runs of kb rows, a last run shorter than kb (4160, 17, 33
  // rows), columns past the CTA's last 32 (2056), and Xᵀ rows not a multiple of 4 (byte stores).
  int64_t seed = 700;
  for (int64_t bc : {256, 512, 1024}) {
    for (const auto& [rows, cols, ld] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {4096, 11008, 0}, {4160, 4096, 0}, {17, 1000, 0}, {33, 2056, 2064}}) {
      for (DType in : {DType::bf16, DType::fp32}) {
        torch::manual_seed(++seed);
        const at::Tensor x = random_matrix(rows, cols, in, ld);
        check_quantize(x, {false, kFormats[seed % 3], 1, bc});
        check_quantize(x, {true, kFormats[(seed + 1) % 3], 1, bc});
        QuantCase general{true, kFormats[seed % 3], 1, bc};  // what the columns kernel replaced
        general.tile_kernel = true;
        check_quantize(x, general);
      }
    }
  }
}

TEST_F(GpuKernels, QuantizeLongSquareBlocks) {
  // int8-block:k-block=<kb>'s weights: kb × kb blocks, W and Wᵀ from one call, on the general
  // path whose apply pass reads one inverse scale a tile (every 128 × 128 tile lies inside one
  // block); sides that are not multiples of kb or of 128, FP32, a gapped leading dimension.
  int64_t seed = 800;
  for (int64_t b : {256, 512, 1024}) {
    for (const auto& [rows, cols, ld, type] :
         std::vector<std::tuple<int64_t, int64_t, int64_t, DType>>{
             {4096, 11008, 0, DType::bf16},
             {1000, 1100, 0, DType::fp32},
             {1280, 2056, 2064, DType::bf16}}) {
      torch::manual_seed(++seed);
      const at::Tensor w = random_matrix(rows, cols, type, ld);
      for (bool old_path : {false, true}) {  // and the per-value lookups it replaced
        QuantCase c{false, kFormats[seed % 3], b, b};
        c.tile_kernel = old_path;
        check_quantize(w, c);
        c.transpose = true;
        c.out = kFormats[(seed + 1) % 3];
        check_quantize(w, c);
      }
    }
  }
}

TEST_F(GpuKernels, QuantizeAtSixteenThousandTokens) {
  torch::manual_seed(100);
  const at::Tensor x = random_matrix(16384, 4096, DType::bf16);
  check_quantize(x, {false, DType::fp8_e4m3, 1, 128});
  check_quantize(x, {true, DType::int8, 1, 128});
  check_quantize(x, {true, DType::int8, 1, 0});
  check_quantize(x, {false, DType::fp8_e5m2, 0, 0});
}

TEST_F(GpuKernels, QuantizeEdgeShapesEveryGranularityFormatAndLayout) {
  // Sizes off the 128 tile and the 16-byte vectors; leading dimensions that break alignment;
  // block shapes that take each path (tile, rows, general), odd ones included.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {1, 1}, {1, 300}, {17, 130}, {128, 128}, {129, 127}, {130, 17}, {255, 257}, {300, 1}};
  std::vector<std::pair<int64_t, int64_t>> blocks = kGranularities;
  // Square ones also check the transposed copy: each path (tile, general) and the tile's
  // smallest blocks.
  blocks.insert(blocks.end(), {{2, 4},
                               {64, 1},
                               {1, 256},
                               {3, 5},
                               {0, 1},
                               {128, 0},
                               {16, 64},
                               {1, 1},
                               {2, 2},
                               {4, 4},
                               {96, 96}});
  int64_t seed = 1000;
  for (auto [rows, cols] : shapes) {
    for (DType type : {DType::bf16, DType::fp32}) {
      for (int64_t ld : {cols, cols + 3, cols + 8}) {
        torch::manual_seed(++seed);
        const at::Tensor x = random_matrix(rows, cols, type, ld);
        for (auto [br, bc] : blocks) {
          for (bool transpose : {false, true}) {
            check_quantize(x, {transpose, kFormats[seed++ % 3], br, bc});
          }
        }
      }
    }
  }
}

// The one-pass tensorwise kernel (BF16, sides multiples of 128): each output layout alone and
// both from one pass, against the reference and against the tile kernel it replaces; with a
// producer's amax as well as its own amax pass; every format; a leading dimension past the
// columns; values half way between two steps, a NaN and an Inf.
// The shapes: one tile; a few, one a CTA of the walk; 4096 × 4096, whose 1024 tiles a GPU of 132
// SMs walks two a CTA (its 528 resident CTAs); 4096 × 11008, past two a CTA, a CTA a tile.
TEST_F(GpuKernels, TensorwiseKernelMatchesTheReferenceAndTheTileKernel) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  int64_t seed = 9000;
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {128, 128}, {384, 256}, {4096, 4096}, {4096, 11008}}) {
    for (int64_t ld : {cols, cols + 8}) {
      torch::manual_seed(++seed);
      const at::Tensor x = random_matrix(rows, cols, DType::bf16, ld);
      const at::Tensor amax = x.abs().max().to(at::kFloat).view(at::kInt).reshape({1}).contiguous();
      for (DType out : kFormats) {
        QuantCase c{false, out, 0, 0};
        {
          QuantizeArgs a;
          a.x = x.data_ptr();
          a.rows = rows;
          a.cols = cols;
          a.ld = ld;
          a.out_type = out;
          a.values = x.data_ptr();
          a.scales = static_cast<float*>(amax.data_ptr());
          ASSERT_STREQ(quantize_kernel_name(a), "tensorwise") << rows << "x" << cols;
        }
        check_quantize(x, c);                  // X, then X and Xᵀ from one pass
        check_quantize(x, {true, out, 0, 0});  // Xᵀ alone
        const KernelQuant own = run_quantize(x, c, /*with_transpose=*/true);
        c.tile_kernel = true;
        const KernelQuant tile = run_quantize(x, c, true);
        EXPECT_TRUE(same_bits(tile.values, own.values)) << dtype_name(out);
        EXPECT_TRUE(same_bits(tile.values_t, own.values_t)) << dtype_name(out);
        EXPECT_TRUE(same_scales(tile.scales, own.scales)) << dtype_name(out);
        c.tile_kernel = false;
        c.amax = reinterpret_cast<const uint32_t*>(amax.data_ptr<int32_t>());
        const KernelQuant given = run_quantize(x, c, true);
        EXPECT_TRUE(same_bits(own.values, given.values)) << dtype_name(out) << ", amax given";
        EXPECT_TRUE(same_bits(own.values_t, given.values_t)) << dtype_name(out) << ", amax given";
        EXPECT_TRUE(same_scales(own.scales, given.scales)) << dtype_name(out) << ", amax given";
      }
    }
  }
  for (DType out : kFormats) {
    // Ties: the amax is the format's largest value, so inv is exactly 1 (as in
    // QuantizeSpecialValuesAndTies, on the tensorwise kernel's grid).
    const auto fmax = static_cast<double>(format_max(out));
    const double step =
        out == DType::int8 ? 0.5 : std::ldexp(1.0, out == DType::fp8_e4m3 ? -10 : -17);
    torch::manual_seed(++seed);
    at::Tensor ties = torch::randint(-1024, 1025, {256, 384}, opts) * step;
    ties.narrow(0, 0, 64).mul_(torch::exp2(torch::randint(0, 14, {64, 384}, opts)));
    ties = ties.clamp(-fmax, fmax);
    ties.index_put_({5, 7}, fmax);
    check_quantize(ties.to(at::kBFloat16), {false, out, 0, 0});
    // A NaN, an Inf: every value 0 and the scale non-finite, in both layouts.
    for (float special :
         {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
      at::Tensor x = torch::randn({256, 384}, opts);
      x.index_put_({200, 300}, special);
      check_quantize(x.to(at::kBFloat16), {false, out, 0, 0});
      check_quantize(x.to(at::kBFloat16), {true, out, 0, 0});
    }
  }
}

// X per row and Xᵀ per row of Xᵀ from one call (QuantizeArgs::copy_rowwise): on the 128 grid
// the row-pair kernel, off it each layout on its own path; both against the reference's two
// rowwise quantizations, and the kernel against the two paths it replaces (tile_kernel).
KernelQuant run_row_pair(const at::Tensor& x, DType out, bool tile_kernel) {
  QuantCase c{false, out, 1, 0};
  c.tile_kernel = tile_kernel;
  c.copy_rowwise = true;
  return run_quantize(x, c, /*with_transpose=*/true);
}

void check_row_pair(const at::Tensor& x, DType out) {
  SCOPED_TRACE(describe(x, {false, out, 1, 0}) + " and its transpose per row");
  const KernelQuant want = expected_quantize(x, {false, out, 1, 0});
  const KernelQuant want_t = expected_quantize(x, {true, out, 1, 0});
  for (bool tile_kernel : {false, true}) {
    const KernelQuant got = run_row_pair(x, out, tile_kernel);
    EXPECT_TRUE(same_scales(want.scales, got.scales)) << "scales" << (tile_kernel ? ", apart" : "");
    EXPECT_TRUE(same_bits(want.values, got.values)) << "values" << (tile_kernel ? ", apart" : "");
    EXPECT_TRUE(same_scales(want_t.scales, got.scales_t))
        << "the transposed copy's scales" << (tile_kernel ? ", apart" : "");
    EXPECT_TRUE(same_bits(want_t.values, got.values_t))
        << "the transposed copy's values" << (tile_kernel ? ", apart" : "");
  }
}

TEST_F(GpuKernels, RowPairMatchesBothRowwiseQuantizations) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  int64_t seed = 9500;
  // On the grid (the kernel), with a leading dimension past the columns, and off it.
  for (auto [rows, cols, ld] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{128, 128, 128},
                                                          {384, 256, 264},
                                                          {4096, 11008, 11008},
                                                          {200, 260, 260},
                                                          {129, 128, 131}}) {
    torch::manual_seed(++seed);
    const at::Tensor x = random_matrix(rows, cols, DType::bf16, ld);
    if (rows % 128 == 0) {
      QuantizeArgs a;
      a.x = x.data_ptr();
      a.rows = rows;
      a.cols = cols;
      a.ld = ld;
      a.block_rows = 1;
      a.values = a.values_t = x.data_ptr();
      a.scales = a.scales_t = reinterpret_cast<float*>(x.data_ptr());
      a.copy_rowwise = true;
      EXPECT_STREQ(quantize_kernel_name(a), "row pair");
    }
    for (DType out : kFormats)
      check_row_pair(x, out);
  }
  // A zero row and a zero column (scale 1), a tiny block, a NaN and an Inf in different rows and
  // columns: those rows and columns all 0.
  at::Tensor x = torch::randn({256, 384}, opts);
  x.select(0, 3).zero_();
  x.select(1, 5).zero_();
  x.narrow(0, 100, 20).narrow(1, 200, 30).mul_(1e-38F);
  x.index_put_({170, 3}, std::numeric_limits<float>::quiet_NaN());
  x.index_put_({60, 250}, -std::numeric_limits<float>::infinity());
  for (DType out : kFormats)
    check_row_pair(x.to(at::kBFloat16), out);
}

// Zeros, NaN, Inf, -0 and values placed exactly half way between two representable values.
TEST_F(GpuKernels, QuantizeSpecialValuesAndTies) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::pair<int64_t, int64_t>> blocks = kGranularities;
  blocks.insert(blocks.end(), {{3, 5}, {0, 1}});
  int64_t seed = 5000;
  for (DType type : {DType::bf16, DType::fp32}) {
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{200, 260}, {384, 512}}) {
      torch::manual_seed(++seed);
      // A zero region (amax 0: scale 1), -0 entries, a NaN and an Inf in different blocks.
      at::Tensor x = torch::randn({rows, cols}, opts);
      x.narrow(0, 0, 40).narrow(1, 0, 140).zero_();
      x.narrow(0, 0, 40).narrow(1, 0, 140).select(1, 7).fill_(-0.0F);
      x.narrow(0, 150, 5).narrow(1, 200, 5).fill_(-0.0F);
      // Blocks of tiny values (max |x| below fmax / FLT_MAX): scale 1, values 0.
      x.narrow(0, 100, 30).narrow(1, 130, 128).mul_(1e-38F);
      x.index_put_({170, 3}, nan);
      x.index_put_({60, 250}, -inf);
      x = x.to(torch_type(type));
      for (auto [br, bc] : blocks) {
        for (bool transpose : {false, true}) {
          for (DType out : kFormats)
            check_quantize(x, {transpose, out, br, bc});
        }
      }
      // Only an Inf (tensorwise: an Inf scale) and all zeros.
      at::Tensor only_inf = torch::randn({rows, cols}, opts);
      only_inf.index_put_({rows - 1, cols - 1}, inf);
      const at::Tensor zeros = torch::zeros({rows, cols}, opts);
      for (const at::Tensor& t : {only_inf.to(torch_type(type)), zeros.to(torch_type(type))}) {
        for (auto [br, bc] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 0}, {128, 128}}) {
          for (bool transpose : {false, true}) {
            for (DType out : kFormats)
              check_quantize(t, {transpose, out, br, bc});
          }
        }
      }
    }
    // Ties: every block's amax is the format's largest value, so inv is exactly 1 and x reaches
    // the rounding unchanged; the grid puts many values half way (INT8 at .5, FP8 at half a
    // step, subnormals included).
    for (DType out : kFormats) {
      const auto fmax = static_cast<double>(format_max(out));
      for (auto [br, bc] :
           std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 0}, {1, 128}, {32, 32}}) {
        torch::manual_seed(++seed);
        const int64_t rows = 96;
        const int64_t cols = 256;
        // Half the smallest subnormal step of each FP8 format (2⁻⁹ for E4M3, 2⁻¹⁶ for E5M2).
        const double step =
            out == DType::int8 ? 0.5 : std::ldexp(1.0, out == DType::fp8_e4m3 ? -10 : -17);
        at::Tensor x = torch::randint(-1024, 1025, {rows, cols}, opts) * step;
        // Larger values in a quarter of the rows, to reach every binade.
        x.narrow(0, 0, rows / 4).mul_(torch::exp2(torch::randint(0, 14, {rows / 4, cols}, opts)));
        x = x.clamp(-fmax, fmax);
        x.slice(0, 0, rows, br > 0 ? br : rows).slice(1, 0, cols, bc > 0 ? bc : cols).fill_(fmax);
        x = x.to(torch_type(type));
        check_quantize(x, {false, out, br, bc});
        check_quantize(x.t().contiguous(), {true, out, br, bc});
      }
    }
  }
}

// Stochastic rounding in the kernel (the apply pass) against the reference, bit for bit: every
// granularity, both layouts, odd shapes, special values. The transposed copy written by the same
// pass is the output's exact transpose (its noise is the output's), not a second draw.
TEST_F(GpuKernels, QuantizeStochasticRoundingMatchesTheReference) {
  std::vector<std::pair<int64_t, int64_t>> blocks = kGranularities;
  blocks.insert(blocks.end(), {{3, 5}, {0, 1}});
  uint64_t seed = 77;
  for (DType type : {DType::bf16, DType::fp32}) {
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{200, 260}, {512, 384}}) {
      torch::manual_seed(static_cast<int64_t>(++seed));
      at::Tensor x = random_matrix(rows, cols, type);
      x.narrow(0, 0, 20).narrow(1, 0, 140).zero_();
      x.index_put_({170, 3}, std::numeric_limits<float>::quiet_NaN());
      for (auto [br, bc] : blocks) {
        for (bool transpose : {false, true}) {
          const QuantCase c{transpose, DType::int8, br, bc, true, ++seed};
          SCOPED_TRACE(describe(x, c) + " stochastic");
          const KernelQuant want = expected_quantize(x, c);
          const KernelQuant got = run_quantize(x, c);
          EXPECT_TRUE(same_scales(want.scales, got.scales)) << "scales";
          EXPECT_TRUE(same_bits(want.values, got.values)) << "values";
          if (transpose || !quantize_writes_transpose_too(br, bc)) continue;
          const KernelQuant both = run_quantize(x, c, /*with_transpose=*/true);
          EXPECT_TRUE(same_bits(want.values, both.values)) << "values, with the transposed copy";
          EXPECT_TRUE(same_bits(want.values.t().contiguous(), both.values_t))
              << "the transposed copy's values";
          EXPECT_TRUE(same_scales(want.scales.t().contiguous(), both.scales_t))
              << "the transposed copy's scales";
        }
      }
    }
  }
  // Rounding to nearest and stochastically differ, and the draw follows the seed.
  const at::Tensor x = random_matrix(256, 256, DType::bf16);
  const KernelQuant nearest = run_quantize(x, {false, DType::int8, 1, 0});
  const KernelQuant a = run_quantize(x, {false, DType::int8, 1, 0, true, 1});
  const KernelQuant b = run_quantize(x, {false, DType::int8, 1, 0, true, 2});
  EXPECT_FALSE(torch::equal(nearest.values, a.values));
  EXPECT_FALSE(torch::equal(a.values, b.values));
  EXPECT_TRUE(torch::equal(a.values, run_quantize(x, {false, DType::int8, 1, 0, true, 1}).values));
}

// The GPU run of the reference is the oracle above; here it is held to the CPU run (the
// definition), values bit for bit.
TEST_F(GpuKernels, GpuReferenceValuesMatchTheCpuReference) {
  torch::manual_seed(7);
  const at::Tensor x = random_matrix(300, 520, DType::bf16);
  for (auto [br, bc] : kGranularities) {
    for (DType out : kFormats) {
      const ref::QuantSpec spec{number_format(out), br, bc};
      const ref::Quantized gpu = ref::quantize(x, spec);
      const ref::Quantized cpu = ref::quantize(x.cpu(), spec);
      EXPECT_TRUE(same_bits(cpu.values.view(at::kByte), gpu.values.view(at::kByte)))
          << dtype_name(out) << " {" << br << "," << bc << "}";
      // And the shortcut for the scales is the CPU reference itself.
      EXPECT_TRUE(same_scales(cpu.scales, expected_quantize(x, {false, out, br, bc}).scales));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Scaled GEMM
// ---------------------------------------------------------------------------------------------

enum class Mode { tensor, row, block };

const char* mode_name(Mode m) {
  return m == Mode::tensor ? "tensor" : (m == Mode::row ? "row" : "block");
}

struct GemmCase {
  int64_t m = 0, n = 0, k = 0;
  Mode mode = Mode::tensor;
  int64_t b_block_rows = 128;  // block mode: 128 (weights), 1 (activations), or any other
  DType c_type = DType::bf16;
  bool bias = false;
  int64_t kblock = 128;  // block mode: the K block (int8-block:k-block=<kb>)
};

std::string describe(const GemmCase& g) {
  return std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) + " " +
         mode_name(g.mode) +
         (g.mode == Mode::block ? "(b " + std::to_string(g.b_block_rows) + ", K block " +
                                      std::to_string(g.kblock) + ")"
                                : "") +
         " -> " + dtype_name(g.c_type) + (g.bias ? " +bias" : "");
}

struct GemmOperands {
  ref::Quantized a, b;
  at::Tensor bias;  // [N] fp32 or undefined
  ScaledGemmArgs args;
};

// Random INT8 operands (the whole range, -128 included) and positive scales spread over several
// binades, in the layout of the case's mode.
GemmOperands make_operands(const GemmCase& g) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const int64_t kblock = g.mode == Mode::block ? g.kblock : 0;
  const int64_t kb = g.mode == Mode::block ? (g.k + kblock - 1) / kblock : 1;
  const int64_t abr = g.mode == Mode::tensor ? 0 : 1;
  const int64_t bbr = g.mode == Mode::tensor ? 0 : (g.mode == Mode::row ? 1 : g.b_block_rows);
  auto scales = [&](int64_t rows, int64_t br) {
    const int64_t n = br == 0 ? 1 : (rows + br - 1) / br;
    return torch::exp(torch::randn({n, kb}, opts)) * 1e-3;
  };
  GemmOperands o{{torch::randint(-128, 128, {g.m, g.k}, opts.dtype(at::kChar)),
                  scales(g.m, abr),
                  {NumberFormat::int8, abr, kblock}},
                 {torch::randint(-128, 128, {g.n, g.k}, opts.dtype(at::kChar)),
                  scales(g.n, bbr),
                  {NumberFormat::int8, bbr, kblock}},
                 g.bias ? torch::randn({g.n}, opts) : at::Tensor(),
                 {}};
  ScaledGemmArgs& a = o.args;
  a.a = o.a.values.data_ptr();
  a.b = o.b.values.data_ptr();
  a.ab_type = DType::int8;
  a.m = g.m;
  a.n = g.n;
  a.k = g.k;
  a.a_scales = o.a.scales.data_ptr<float>();
  a.a_block_rows = abr;
  a.b_scales = o.b.scales.data_ptr<float>();
  a.b_block_rows = bbr;
  a.kblock = kblock;
  a.bias = g.bias ? o.bias.data_ptr<float>() : nullptr;
  a.c_type = g.c_type;
  return o;
}

at::Tensor poisoned_output(const GemmCase& g) {
  return torch::full({g.m, g.n}, std::numeric_limits<float>::quiet_NaN(),
                     torch::TensorOptions().device(torch::kCUDA).dtype(torch_type(g.c_type)));
}

void check_gemm(const GemmCase& g) {
  SCOPED_TRACE(describe(g));
  GemmOperands o = make_operands(g);
  at::Tensor c = poisoned_output(g);
  o.args.c = c.data_ptr();
  scaled_gemm_mma(o.args, nullptr);
  const at::Tensor want = ref::scaled_gemm(o.a, o.b, torch_type(g.c_type), o.bias);
  EXPECT_TRUE(same_bits(want, c));
}

void check_dequantize(const GemmCase& g) {
  SCOPED_TRACE("dequantize_int32 " + describe(g));
  GemmOperands o = make_operands(g);
  const at::Tensor acc = ref::int8_gemm(o.a.values, o.b.values).contiguous();
  at::Tensor c = poisoned_output(g);
  o.args.c = c.data_ptr();
  dequantize_int32(acc.data_ptr<int32_t>(), o.args, nullptr);
  EXPECT_TRUE(same_bits(ref::scaled_gemm(o.a, o.b, torch_type(g.c_type), o.bias), c));
}

// The distinct training GEMMs (fprop, dgrad, wgrad) of the seed models' linear layers.
std::vector<std::tuple<std::string, kernels::GemmKind, workloads::GemmShape>> model_gemms(
    int64_t tokens) {
  std::vector<std::tuple<std::string, kernels::GemmKind, workloads::GemmShape>> out;
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  for (const std::string& name : kSeedModels) {
    for (const workloads::LinearShape& l :
         workloads::linear_shapes(workloads::builtin_model(name))) {
      for (const auto& [kind, s] : workloads::training_gemms(l, tokens)) {
        if (seen.insert({s.m, s.n, s.k}).second) out.emplace_back(name + " " + l.part, kind, s);
      }
    }
  }
  return out;
}

TEST_F(GpuKernels, ScaledGemmEveryTrainingGemmOfTheSeedModels) {
  // Each distinct GEMM in block mode (B's scales 128×128 for the weights of fprop and dgrad,
  // 1×128 for the activations of wgrad) and in tensor or row mode in turn, outputs and bias in
  // turn.
  int64_t i = 0;
  for (const auto& [what, kind, s] : model_gemms(kTokens)) {
    SCOPED_TRACE(what + " " + std::string(kernels::to_string(kind)));
    torch::manual_seed(++i);
    const int64_t bbr = kind == kernels::GemmKind::wgrad ? 1 : 128;
    const DType c_type = i % 2 ? DType::bf16 : DType::fp32;
    check_gemm({s.m, s.n, s.k, Mode::block, bbr, c_type, i % 3 == 0});
    // Without K blocks, INT32 over all of K is exact only up to kInt8GemmMaxK: the output
    // layer's dgrad (K = a vocabulary) needs blocks.
    if (s.k <= ref::kInt8GemmMaxK) {
      check_gemm({s.m, s.n, s.k, i % 2 ? Mode::row : Mode::tensor, 0, c_type, i % 3 == 1});
    }
  }
}

TEST_F(GpuKernels, ScaledGemmAtSixteenThousandTokens) {
  // A sample: llama3.1-8b's gate_up fprop and down wgrad (K = 16384 tokens).
  torch::manual_seed(200);
  check_gemm({16384, 28672, 4096, Mode::block, 128, DType::bf16, false});
  check_gemm({4096, 14336, 16384, Mode::block, 1, DType::fp32, false});
  check_gemm({4096, 14336, 16384, Mode::row, 0, DType::bf16, true});
}

TEST_F(GpuKernels, ScaledGemmEdgeShapes) {
  // M and N off the 128 tile (1, 17, odd N that forbids paired stores), K from one mma step to
  // just past the 3-stage pipeline, every mode, both outputs, with and without bias.
  int64_t i = 0;
  for (int64_t m : {1, 17, 128, 129, 300}) {
    for (int64_t n : {1, 8, 127, 130, 256}) {
      for (int64_t k : {16, 144, 128, 400, 528}) {
        for (Mode mode : {Mode::tensor, Mode::row, Mode::block}) {
          torch::manual_seed(++i);
          // Block mode's B scales: 128×128 and 32-row blocks and one for all rows (one scale per
          // warp's columns), and 1×128 (one per column).
          const int64_t b_block_rows = std::array<int64_t, 4>{128, 1, 32, 0}[i % 4];
          check_gemm({m, n, k, mode, b_block_rows, i % 2 ? DType::bf16 : DType::fp32, i % 3 == 0});
        }
      }
    }
  }
}

TEST_F(GpuKernels, ScaledGemmLongerKBlocks) {
  // int8-block:k-block=<kb> on the mma.sync kernel: 256 reads its partials through the magic
  // value (|partial| ≤ 256·128², the bound itself reached by -128·-128), 512 and 1024 by I2F.
  // Llama2-7b's products at 1024 tokens, then K ending inside a block and M, N off the tile.
  int64_t i = 0;
  for (int64_t kblock : {256, 512, 1024}) {
    std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
    for (const workloads::LinearShape& l :
         workloads::linear_shapes(workloads::builtin_model("llama2-7b"))) {
      for (const auto& [kind, s] : workloads::training_gemms(l, 1024)) {
        if (!seen.insert({s.m, s.n, s.k}).second) continue;
        torch::manual_seed(400 + ++i);
        const int64_t bbr = kind == kernels::GemmKind::wgrad ? 1 : kblock;
        check_gemm({s.m, s.n, s.k, Mode::block, bbr, i % 2 ? DType::bf16 : DType::fp32, i % 3 == 0,
                    kblock});
      }
    }
    for (int64_t k : {16, 400, 1008, 2064}) {
      torch::manual_seed(400 + ++i);
      check_gemm({129, 130, k, Mode::block, i % 2 ? 1 : kblock, DType::fp32, i % 3 == 0, kblock});
    }
  }
  // The magic value's bound: every product -128·-128 over a K block of 256.
  GemmCase g{64, 64, 512, Mode::block, 256, DType::fp32, false, 256};
  GemmOperands o = make_operands(g);
  o.a.values.fill_(-128);
  o.b.values.fill_(-128);
  at::Tensor c = poisoned_output(g);
  o.args.c = c.data_ptr();
  scaled_gemm_mma(o.args, nullptr);
  EXPECT_TRUE(same_bits(ref::scaled_gemm(o.a, o.b, at::kFloat, o.bias), c));
}

TEST_F(GpuKernels, ScaledGemmLongKWithoutBlocksStaysExact) {
  // INT32 over all of K, scaled once: K near the overflow bound of 2³¹ / 127².
  torch::manual_seed(300);
  check_gemm({64, 96, 133136, Mode::tensor, 0, DType::fp32, false});
  check_gemm({130, 72, 20000, Mode::row, 0, DType::bf16, true});
}

TEST_F(GpuKernels, DequantizeInt32) {
  int64_t i = 0;
  for (auto [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {4096, 4096, 4096}, {4096, 11008, 4096}, {17, 130, 144}, {1, 1, 16}, {33, 1027, 64}}) {
    for (Mode mode : {Mode::tensor, Mode::row}) {
      for (DType c_type : {DType::bf16, DType::fp32}) {
        torch::manual_seed(++i);
        check_dequantize({m, n, k, mode, 0, c_type, i % 2 == 0});
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Argument checks: no GPU needed (the launchers check before any CUDA call)
// ---------------------------------------------------------------------------------------------

QuantizeArgs valid_quantize_args() {
  static char fake[16];
  QuantizeArgs a;
  a.x = fake;
  a.rows = 256;
  a.cols = 512;
  a.ld = 512;
  a.block_rows = 1;
  a.block_cols = 128;
  a.values = fake;
  a.scales = reinterpret_cast<float*>(fake);
  return a;
}

TEST(GpuKernelArgs, QuantizeRejectsInconsistentArguments) {
  auto with = [](auto change) {
    QuantizeArgs a = valid_quantize_args();
    change(a);
    return a;
  };
  EXPECT_THROW(quantize(with([](QuantizeArgs& a) { a.x = nullptr; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with([](QuantizeArgs& a) { a.ld = 100; }), nullptr), std::invalid_argument);
  EXPECT_THROW(quantize(with([](QuantizeArgs& a) {
                          a.stochastic = true;
                          a.out_type = DType::fp8_e4m3;
                        }),
                        nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with([](QuantizeArgs& a) { a.rows = 0; }), nullptr), std::invalid_argument);
  EXPECT_THROW(quantize(with([](QuantizeArgs& a) { a.x_type = DType::int8; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with([](QuantizeArgs& a) { a.out_type = DType::bf16; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with([](QuantizeArgs& a) { a.block_cols = -1; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with([](QuantizeArgs& a) { a.scales = nullptr; }), nullptr),
               std::invalid_argument);
  // Tensorwise needs the workspace.
  EXPECT_THROW(quantize(with([](QuantizeArgs& a) { a.block_rows = a.block_cols = 0; }), nullptr),
               std::invalid_argument);
  // An amax history: tensorwise, in place of a given amax, three slots or more, its current slot
  // among them or -1 (the ring's index says).
  static uint32_t ring[5];
  const auto history = [](auto change) {
    return [change](QuantizeArgs& a) {
      a.block_rows = a.block_cols = 0;
      a.delayed = true;
      a.history = ring;
      a.history_slots = 3;
      change(a);
    };
  };
  EXPECT_THROW(quantize(with(history([](QuantizeArgs& a) { a.block_cols = 128; })), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with(history([](QuantizeArgs& a) { a.amax = ring; })), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with(history([](QuantizeArgs& a) { a.history_slots = 2; })), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with(history([](QuantizeArgs& a) { a.stochastic = true; })), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with(history([](QuantizeArgs& a) { a.history_current = 3; })), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with(history([](QuantizeArgs& a) { a.history_current = -2; })), nullptr),
               std::invalid_argument);
  // The transposed copy: both pointers, square blocks, no transpose of its own.
  static char copy[16];
  const auto with_copy = [&](auto change) {
    return with([&](QuantizeArgs& a) {
      a.block_rows = a.block_cols = 128;
      a.values_t = copy;
      a.scales_t = reinterpret_cast<float*>(copy);
      change(a);
    });
  };
  EXPECT_THROW(quantize(with_copy([](QuantizeArgs& a) { a.block_rows = 1; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with_copy([](QuantizeArgs& a) { a.transpose = true; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with_copy([](QuantizeArgs& a) { a.scales_t = nullptr; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(quantize(with_copy([](QuantizeArgs& a) { a.values_t = nullptr; }), nullptr),
               std::invalid_argument);
}

// Which kernel runs (quantize_kernel_name) needs no device: tensorwise BF16 on the 128 grid with
// aligned rows takes the one-pass kernel, anything else the paths it took before.
TEST(GpuKernelArgs, OnlyAlignedTensorwiseBf16OnTheTileGridTakesTheTensorwiseKernel) {
  alignas(16) static char buffer[64];
  const auto with = [&](auto change) {
    QuantizeArgs a = valid_quantize_args();  // 256 × 512, {1,128}
    a.x = a.values = buffer;
    a.scales = reinterpret_cast<float*>(buffer);
    a.block_rows = a.block_cols = 0;
    change(a);
    return std::string(quantize_kernel_name(a));
  };
  EXPECT_EQ(with([](QuantizeArgs&) {}), "tensorwise");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.transpose = true; }), "tensorwise");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.block_rows = 256; }), "tensorwise");
  EXPECT_EQ(with([](QuantizeArgs& a) {
              a.values_t = buffer;
              a.scales_t = reinterpret_cast<float*>(buffer);
            }),
            "tensorwise");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.out_type = DType::fp8_e5m2; }), "tensorwise");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.x_type = DType::fp32; }), "general");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.rows = 200; }), "general");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.ld = 516; }), "general");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.x = buffer + 2; }), "general");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.values = buffer + 4; }), "general");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.stochastic = true; }), "general");
  // Delayed scaling: a given stale amax, or an amax history that the kernel reads itself; off
  // the grid, the general path after a small kernel finds the history's amax.
  EXPECT_EQ(with([](QuantizeArgs& a) {
              a.delayed = true;
              a.amax = reinterpret_cast<const uint32_t*>(buffer);
            }),
            "tensorwise");
  const auto with_history = [](QuantizeArgs& a) {
    a.delayed = true;
    a.history = reinterpret_cast<uint32_t*>(buffer);
    a.history_slots = 6;
  };
  EXPECT_EQ(with(with_history), "tensorwise");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              with_history(a);
              a.rows = 200;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              with_history(a);
              a.delayed = false;  // a history's first quantization: its own amax, recorded
              a.cols = 500;
            }),
            "general");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.tile_kernel = true; }), "general");
  EXPECT_EQ(with([](QuantizeArgs& a) { a.block_rows = 1; }), "rows");
  // 1 × kb blocks (int8-block:k-block=<kb>): a warp a block where its vectors fit, untransposed.
  const auto segments = [&](int64_t bc) {
    return [bc](QuantizeArgs& a) {
      a.block_rows = 1;
      a.block_cols = bc;
    };
  };
  EXPECT_EQ(with(segments(256)), "segments");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              segments(256)(a);
              a.x_type = DType::fp32;
            }),
            "segments");
  // The same blocks of Xᵀ (wgrad's): a CTA a run of kb rows × 32 columns, BF16 only.
  const auto columns = [&](int64_t bc) {
    return [&, bc](QuantizeArgs& a) {
      segments(bc)(a);
      a.transpose = true;
    };
  };
  EXPECT_EQ(with(columns(256)), "columns");
  EXPECT_EQ(with(columns(512)), "columns");
  EXPECT_EQ(with(columns(1024)), "columns");
  EXPECT_EQ(with(columns(384)), "general");
  // kb × kb blocks (the long K blocks' weights): the amax pass, then one scale a 128 × 128 tile.
  const auto square = [&](int64_t b) {
    return [b](QuantizeArgs& a) {
      a.block_rows = b;
      a.block_cols = b;
    };
  };
  EXPECT_EQ(with(square(256)), "block tiles");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              square(256)(a);
              a.transpose = true;
              a.values_t = nullptr;
            }),
            "block tiles");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              square(256)(a);
              a.values_t = buffer;
              a.scales_t = reinterpret_cast<float*>(buffer);
            }),
            "block tiles");
  EXPECT_EQ(with(square(384)), "general");  // 256 rows: the block is clamped to 256 × 384
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              square(256)(a);
              a.x_type = DType::fp32;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              square(256)(a);
              a.tile_kernel = true;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              square(256)(a);
              a.rows = 200;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              columns(256)(a);
              a.tile_kernel = true;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              columns(256)(a);
              a.x_type = DType::fp32;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              columns(256)(a);
              a.x = buffer + 2;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              columns(256)(a);
              a.cols = 508;
              a.ld = 508;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              columns(256)(a);
              a.stochastic = true;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              segments(256)(a);
              a.x = buffer + 2;
            }),
            "general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              segments(256)(a);
              a.stochastic = true;
            }),
            "general");
  EXPECT_EQ(with(segments(128)), "tile");
  const auto row_pair = [&](QuantizeArgs& a) {
    a.block_rows = 1;
    a.values_t = buffer;
    a.scales_t = reinterpret_cast<float*>(buffer);
    a.copy_rowwise = true;
  };
  EXPECT_EQ(with(row_pair), "row pair");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              row_pair(a);
              a.rows = 200;
            }),
            "rows + general");
  EXPECT_EQ(with([&](QuantizeArgs& a) {
              row_pair(a);
              a.tile_kernel = true;
            }),
            "rows + general");
  // copy_rowwise is for X per row, untransposed, with both copy pointers and no given amax.
  for (const auto& wrong : std::vector<std::function<void(QuantizeArgs&)>>{
           [](QuantizeArgs& a) { a.block_rows = 0; }, [](QuantizeArgs& a) { a.block_cols = 128; },
           [](QuantizeArgs& a) { a.transpose = true; },
           [](QuantizeArgs& a) { a.values_t = nullptr; },
           [&](QuantizeArgs& a) { a.amax = reinterpret_cast<const uint32_t*>(buffer); }}) {
    EXPECT_THROW(with([&](QuantizeArgs& a) {
                   row_pair(a);
                   wrong(a);
                 }),
                 std::invalid_argument);
  }
  EXPECT_EQ(with([](QuantizeArgs& a) {
              a.block_rows = 1;
              a.block_cols = 128;
            }),
            "tile");
}

// The fused Hadamard quantization takes every rotated operand of llama2-7b's layer (dY along
// its features, Wᵀ and Xᵀ along W's and X's rows) and leaves to the torch path the blocks past
// 256, blocks that do not divide K, sides off the 8-grid and misaligned pointers.
TEST(GpuKernelArgs, TheHadamardKernelTakesTheLayersOperandsAndRefusesTheRest) {
  alignas(16) static char buffer[64];
  const auto with = [&](int64_t rows, int64_t cols, bool transpose, auto change) {
    HadamardQuantizeArgs a;
    a.x = a.values = a.workspace = buffer;
    a.scales = reinterpret_cast<float*>(buffer);
    a.rows = rows;
    a.cols = cols;
    a.ld = cols;
    a.transpose = transpose;
    a.block = 128;
    change(a);
    return a;
  };
  const auto same = [](HadamardQuantizeArgs&) {};
  EXPECT_TRUE(hadamard_kernel_applies(with(4096, 11008, false, same)));  // dY, dgrad
  EXPECT_TRUE(hadamard_kernel_applies(with(11008, 4096, true, same)));   // Wᵀ, dgrad
  EXPECT_TRUE(hadamard_kernel_applies(with(4096, 4096, true, same)));    // Xᵀ, wgrad
  EXPECT_TRUE(hadamard_kernel_applies(with(4096, 11008, true, [](auto& a) { a.block = 256; })));
  EXPECT_TRUE(hadamard_kernel_applies(with(72, 1280, false, [](auto& a) { a.block = 2; })));
  const auto refused = [&](HadamardQuantizeArgs a) {
    EXPECT_FALSE(hadamard_kernel_applies(a));
    EXPECT_THROW(quantize_hadamard(a, nullptr), std::invalid_argument);
  };
  refused(with(4096, 4096, false, [](auto& a) { a.block = 512; }));
  refused(with(4096, 4096, false, [](auto& a) { a.block = 96; }));
  refused(with(4096, 4096, false, [](auto& a) { a.block = 1; }));
  refused(with(4096, 4160, false, [](auto& a) { a.block = 256; }));  // 4160 = 16.25 blocks
  refused(with(4090, 4096, true, same));                             // Xᵀ's K of 4090
  refused(with(4090, 4096, false, same));                            // rows off the 8-grid
  refused(with(4096, 4096, false, [](auto& a) { a.ld = 4000; }));
  refused(with(4096, 4096, false, [](auto& a) { a.x = buffer + 2; }));
  refused(with(4096, 4096, false, [](auto& a) { a.values = buffer + 4; }));
  refused(with(4096, 4096, false, [](auto& a) { a.out_type = DType::bf16; }));
  // FP32 out: the rotation alone, 16-byte stores, no workspace.
  const auto rotate_only = [](HadamardQuantizeArgs& a) { a.out_type = DType::fp32; };
  EXPECT_TRUE(hadamard_kernel_applies(with(4096, 4096, true, rotate_only)));
  EXPECT_EQ(hadamard_workspace_bytes(with(4096, 4096, true, rotate_only)), 0u);
  refused(with(4096, 4096, false, [](auto& a) {
    a.out_type = DType::fp32;
    a.values = buffer + 8;
  }));
  EXPECT_EQ(hadamard_workspace_bytes(with(4096, 11008, true, same)), 4u);
  EXPECT_EQ(hadamard_workspace_bytes(with(4096, 11008, true, [](auto& a) { a.rowwise = true; })),
            11008u * 4);
  EXPECT_EQ(hadamard_norm(4), 0.5f);
  EXPECT_EQ(hadamard_norm(128), static_cast<float>(1.0 / std::sqrt(128.0)));
}

// saved=int8's restore refuses what its 16-byte accesses cannot take, before any CUDA call.
TEST(GpuKernelArgs, TheRestoreKernelRefusesRaggedOrUnalignedRows) {
  alignas(16) static char buffer[64];
  RestoreInt8Args a;
  a.values = reinterpret_cast<const int8_t*>(buffer);
  a.scales = reinterpret_cast<const float*>(buffer);
  a.out = buffer;
  a.rows = 2;
  a.cols = 200;
  EXPECT_THROW(restore_int8_blocks(a, nullptr), std::invalid_argument);  // cols % 16 != 0
  a.cols = 208;
  a.values = reinterpret_cast<const int8_t*>(buffer + 8);
  EXPECT_THROW(restore_int8_blocks(a, nullptr), std::invalid_argument);  // unaligned
  a.values = nullptr;
  EXPECT_THROW(restore_int8_blocks(a, nullptr), std::invalid_argument);
}

// The norms and SwiGLU write and read saved=int8's copy only in whole blocks of 128 and with
// their scales; anything else is refused before any CUDA call.
TEST(GpuKernelArgs, TheNormAndSwigluTakeInt8CopiesOnlyInWholeBlocks) {
  alignas(16) static char buffer[64];
  const Int8Blocks blocks{reinterpret_cast<int8_t*>(buffer), reinterpret_cast<float*>(buffer)};
  SwigluArgs s;
  s.gate_up = s.d_out = buffer;
  s.out = s.d_gate_up = buffer;
  s.rows = 2;
  s.inner = 200;  // a multiple of 8, not of 128
  s.keep = blocks;
  EXPECT_THROW(swiglu_forward(s, nullptr), std::invalid_argument);
  s.keep = {};
  s.kept = {blocks.values, blocks.scales};
  EXPECT_THROW(swiglu_backward(s, nullptr), std::invalid_argument);
  s.inner = 256;
  s.kept.scales = nullptr;
  EXPECT_THROW(swiglu_backward(s, nullptr), std::invalid_argument);
  s.kept = {reinterpret_cast<const int8_t*>(buffer + 4), blocks.scales};
  EXPECT_THROW(swiglu_backward(s, nullptr), std::invalid_argument);  // values not 8-aligned

  alignas(16) static float weight[8];
  RmsNormArgs n;
  n.x = buffer;
  n.y = buffer;
  n.weight = weight;
  n.rstd = weight;
  n.rows = 2;
  n.cols = 200;
  n.keep = blocks;
  EXPECT_THROW(rmsnorm_forward(n, nullptr), std::invalid_argument);
  RmsNormBackwardArgs b;
  b.dy = buffer;
  b.dh = b.workspace = buffer;
  b.weight = weight;
  b.rstd = weight;
  b.dweight = weight;
  b.rows = 2;
  b.cols = 256;
  b.h_kept = {blocks.values, nullptr};
  EXPECT_THROW(rmsnorm_backward(b, nullptr), std::invalid_argument);
  b.h_kept = {};
  EXPECT_THROW(rmsnorm_backward(b, nullptr), std::invalid_argument);  // neither h nor a copy
}

TEST(GpuKernelArgs, QuantizeWorkspaceIsOneWordPerBlockOnlyForTwoPassGranularities) {
  QuantizeArgs a = valid_quantize_args();      // 256 × 512
  EXPECT_EQ(quantize_workspace_bytes(a), 0U);  // {1,128}: one pass
  a.block_rows = a.block_cols = 128;
  EXPECT_EQ(quantize_workspace_bytes(a), 0U);
  a.block_rows = 1;
  a.block_cols = 0;
  EXPECT_EQ(quantize_workspace_bytes(a), 0U);  // rowwise: one CTA per row
  a.transpose = true;
  EXPECT_EQ(quantize_workspace_bytes(a), 512U * 4);  // rowwise of Xᵀ: one amax per column of X
  a.block_rows = a.block_cols = 0;
  EXPECT_EQ(quantize_workspace_bytes(a), 4U);  // tensorwise
  // 2×2 blocks of a 256 × 2 matrix take the tile kernel (a block spanning all columns spans
  // the tile), but not with the transposed copy, which takes one scale per 4 of its columns
  // and so needs blocks 4 rows tall: that goes the two-pass way, one word per block.
  static char copy[16];
  a.transpose = false;
  a.cols = a.ld = 2;
  a.block_rows = a.block_cols = 2;
  EXPECT_EQ(quantize_workspace_bytes(a), 0U);
  a.values_t = copy;
  a.scales_t = reinterpret_cast<float*>(copy);
  EXPECT_EQ(quantize_workspace_bytes(a), 128U * 4);
}

TEST(GpuKernelArgs, ScaledGemmRejectsInconsistentArguments) {
  alignas(16) static char fake[16];
  auto with = [&](auto change) {
    ScaledGemmArgs a;
    a.a = a.b = fake;
    a.m = a.n = 256;
    a.k = 512;
    a.a_scales = a.b_scales = reinterpret_cast<const float*>(fake);
    a.c = fake;
    change(a);
    return a;
  };
  EXPECT_THROW(scaled_gemm_mma(with([](ScaledGemmArgs& a) { a.k = 40; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(scaled_gemm_mma(with([](ScaledGemmArgs& a) { a.kblock = 64; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(scaled_gemm_mma(with([](ScaledGemmArgs& a) { a.kblock = 384; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(scaled_gemm_mma(with([](ScaledGemmArgs& a) { a.k = 133152; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(scaled_gemm_mma(with([&](ScaledGemmArgs& a) { a.a = fake + 1; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(
      scaled_gemm_mma(with([](ScaledGemmArgs& a) { a.ab_type = DType::fp8_e4m3; }), nullptr),
      std::invalid_argument);
  EXPECT_THROW(scaled_gemm_mma(with([](ScaledGemmArgs& a) { a.c_type = DType::int32; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(scaled_gemm_mma(with([](ScaledGemmArgs& a) { a.b_scales = nullptr; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(scaled_gemm_mma(with([](ScaledGemmArgs& a) { a.m = 0; }), nullptr),
               std::invalid_argument);
  const auto acc = reinterpret_cast<const int32_t*>(fake);
  EXPECT_THROW(dequantize_int32(acc, with([](ScaledGemmArgs& a) { a.kblock = 128; }), nullptr),
               std::invalid_argument);
  EXPECT_THROW(dequantize_int32(nullptr, with([](ScaledGemmArgs&) {}), nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace lpbench::cuda
