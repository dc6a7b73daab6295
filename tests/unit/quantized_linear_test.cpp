// The quantized linear layer under every recipe, against the exact layer and against its own
// definition.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "kernels/profiling/range.h"
#include "kernels/recipe.h"
#include "kernels/reference/hadamard.h"
#include "kernels/reference/quantize.h"
#include "kernels/reference/scaled_gemm.h"
#include "kernels/torch/gemm.h"
#include "kernels/torch/gemm_stats.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/quantized_linear.h"
#include "kernels/torch/rounding_seed.h"
#include "tests/support/tensor_compare.h"

namespace lpbench::kernels {
namespace {

using lpbench::test_support::relative_error;

struct LinearCase {
  at::Tensor x, w, grad_y;  // BF16 inputs and the upstream gradient
};

LinearCase make_case(int64_t seed, int64_t tokens = 96, int64_t k = 256, int64_t n = 192) {
  torch::manual_seed(seed);
  return {torch::randn({2, tokens / 2, k}).to(torch::kBFloat16),
          (torch::randn({n, k}) * 0.05).to(torch::kBFloat16),
          torch::randn({2, tokens / 2, n}).to(torch::kBFloat16)};
}

struct Results {
  at::Tensor y, grad_x, grad_w;
};

Results run(const LinearCase& c, const LinearGemms& gemms) {
  at::Tensor x = c.x.clone().requires_grad_(true);
  at::Tensor w = c.w.clone().requires_grad_(true);
  at::Tensor y = quantized_linear(x, w, gemms);
  y.backward(c.grad_y);
  return {y.detach(), x.grad(), w.grad()};
}

// The exact answer for the layer's inputs, in float64.
Results exact(const LinearCase& c) {
  const at::Tensor x = c.x.to(at::kDouble).reshape({-1, c.x.size(-1)});
  const at::Tensor w = c.w.to(at::kDouble);
  const at::Tensor g = c.grad_y.to(at::kDouble).reshape({-1, c.grad_y.size(-1)});
  return {at::mm(x, w.t()).view(c.grad_y.sizes()), at::mm(g, w).view(c.x.sizes()),
          at::mm(g.t(), x)};
}

// A BF16 product is FP32 products and sums rounded once to BF16 (cuBLAS on the GPU, an FP32
// sgemm on the CPU): the BF16 specs are torch's autograd of the FP32 layer, each result rounded.
TEST(QuantizedLinear, Bf16SpecsAreTheFp32LayerRoundedOnce) {
  const LinearCase c = make_case(0);
  const Results ours = run(c, LinearGemms::all_bf16());
  at::Tensor x = c.x.to(at::kFloat).requires_grad_(true);
  at::Tensor w = c.w.to(at::kFloat).requires_grad_(true);
  at::Tensor y = at::matmul(x, w.t());
  y.backward(c.grad_y.to(at::kFloat));
  EXPECT_TRUE(torch::equal(ours.y, y.detach().to(at::kBFloat16)));
  EXPECT_TRUE(torch::equal(ours.grad_x, x.grad().to(at::kBFloat16))) << "dgrad";
  EXPECT_TRUE(torch::equal(ours.grad_w, w.grad().to(at::kBFloat16))) << "wgrad";
}

TEST(QuantizedLinear, EachGemmIsExactlyItsDefinition) {
  // int8-block: fprop X (1×128) · W (128×128); dgrad dY (1×128) · Wᵀ (128×128, the transposed
  // blocks of W); wgrad dYᵀ (1×128 along tokens) · Xᵀ (1×128 along tokens).
  const LinearCase c = make_case(1, 256, 256, 256);
  const LinearGemms gemms = recipe_by_name("int8-block").gemms;
  const Results ours = run(c, gemms);
  const at::Tensor x = c.x.reshape({-1, 256});
  const at::Tensor g = c.grad_y.reshape({-1, 256});
  using reference::quantize;
  const auto qw = quantize(c.w, {NumberFormat::int8, 128, 128});
  const at::Tensor y =
      reference::scaled_gemm(quantize(x, {NumberFormat::int8, 1, 128}), qw, at::kBFloat16);
  EXPECT_TRUE(torch::equal(ours.y.reshape({-1, 256}), y)) << "fprop";
  const at::Tensor dx = reference::scaled_gemm(quantize(g, {NumberFormat::int8, 1, 128}),
                                               reference::transpose(qw), at::kBFloat16);
  EXPECT_TRUE(torch::equal(ours.grad_x.reshape({-1, 256}), dx)) << "dgrad";
  const at::Tensor dw =
      reference::scaled_gemm(quantize(g.t(), {NumberFormat::int8, 1, 128}),
                             quantize(x.t(), {NumberFormat::int8, 1, 128}), at::kBFloat16);
  EXPECT_TRUE(torch::equal(ours.grad_w, dw)) << "wgrad";
}

TEST(QuantizedLinear, LongerKBlocksAreExactlyTheirDefinition) {
  // int8-block:k-block=256: X and dY in 1×256 blocks, W in 256×256 (dgrad's Wᵀ its transposed
  // blocks); K = 640 ends inside a block in fprop, and wgrad's 384 tokens do too.
  const LinearCase c = make_case(4, 384, 640, 512);
  const Results ours = run(c, parse_recipe("int8-block:k-block=256").gemms);
  const at::Tensor x = c.x.reshape({-1, 640});
  const at::Tensor g = c.grad_y.reshape({-1, 512});
  using reference::quantize;
  const auto qw = quantize(c.w, {NumberFormat::int8, 256, 256});
  const auto rows = [](const at::Tensor& t) { return quantize(t, {NumberFormat::int8, 1, 256}); };
  EXPECT_TRUE(
      torch::equal(ours.y.reshape({-1, 512}), reference::scaled_gemm(rows(x), qw, at::kBFloat16)))
      << "fprop";
  EXPECT_TRUE(
      torch::equal(ours.grad_x.reshape({-1, 640}),
                   reference::scaled_gemm(rows(g), reference::transpose(qw), at::kBFloat16)))
      << "dgrad";
  EXPECT_TRUE(
      torch::equal(ours.grad_w, reference::scaled_gemm(rows(g.t()), rows(x.t()), at::kBFloat16)))
      << "wgrad";
  // And they are not the 128-block products.
  const Results blocks128 = run(c, recipe_by_name("int8-block").gemms);
  EXPECT_FALSE(torch::equal(ours.y, blocks128.y));
}

TEST(QuantizedLinear, TensorwiseGemmsAreExactlyTheirDefinition) {
  // int8-tensor quantizes X, W and dY once each for both layouts (one pass on the GPU); every
  // product must still be the one that quantizes each operand in its own layout.
  const LinearCase c = make_case(5, 256, 384, 128);
  const Results ours = run(c, recipe_by_name("int8-tensor").gemms);
  const at::Tensor x = c.x.reshape({-1, 384});
  const at::Tensor g = c.grad_y.reshape({-1, 128});
  const auto q = [](const at::Tensor& t) {
    return reference::quantize(t, {NumberFormat::int8, 0, 0});
  };
  EXPECT_TRUE(
      torch::equal(ours.y.reshape({-1, 128}), reference::scaled_gemm(q(x), q(c.w), at::kBFloat16)))
      << "fprop";
  EXPECT_TRUE(torch::equal(ours.grad_x.reshape({-1, 384}),
                           reference::scaled_gemm(q(g), q(c.w.t()), at::kBFloat16)))
      << "dgrad";
  EXPECT_TRUE(torch::equal(ours.grad_w, reference::scaled_gemm(q(g.t()), q(x.t()), at::kBFloat16)))
      << "wgrad";
}

void expect_same_operand(const GemmOperand& got, const GemmOperand& want, const char* what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.q.has_value(), want.q.has_value());
  EXPECT_EQ(got.bf16.defined(), want.bf16.defined());
  if (got.bf16.defined()) {
    EXPECT_TRUE(torch::equal(got.bf16, want.bf16));
  }
  if (!got.q) return;
  EXPECT_EQ(got.q->spec.format, want.q->spec.format);
  EXPECT_EQ(got.q->spec.block_rows, want.q->spec.block_rows);
  EXPECT_EQ(got.q->spec.block_cols, want.q->spec.block_cols);
  EXPECT_TRUE(torch::equal(got.q->values, want.q->values));
  EXPECT_TRUE(torch::equal(got.q->scales, want.q->scales));
}

TEST(OperandPair, EqualsEachUsePreparedAloneUnderEveryRecipe) {
  // The three sources a linear layer reads in both layouts, under every recipe: quantized once
  // where the two uses agree on a spec that transposes exactly, twice otherwise, the same
  // operands either way.
  torch::manual_seed(6);
  const at::Tensor x = torch::randn({200, 384}).to(torch::kBFloat16);
  const at::Tensor w = (torch::randn({136, 384}) * 0.05).to(torch::kBFloat16);
  const at::Tensor dy = torch::randn({200, 136}).to(torch::kBFloat16);
  // And with the sharing turned off (lpbench run --separate-layout-quantize).
  for (const bool sharing : {true, false}) {
    set_layout_sharing(sharing);
    for (const std::string& name : recipe_names()) {
      SCOPED_TRACE(name + (sharing ? "" : ", separate passes"));
      const LinearGemms g = recipe_by_name(name).gemms;
      const struct {
        const at::Tensor& source;
        OperandUse direct, transposed;
      } uses[] = {
          {x, {g.fprop, GemmKind::fprop, Side::lhs}, {g.wgrad, GemmKind::wgrad, Side::rhs}},
          {w, {g.fprop, GemmKind::fprop, Side::rhs}, {g.dgrad, GemmKind::dgrad, Side::rhs}},
          {dy, {g.dgrad, GemmKind::dgrad, Side::lhs}, {g.wgrad, GemmKind::wgrad, Side::lhs}}};
      for (const auto& u : uses) {
        const auto [direct, transposed] = prepare_operand_pair(u.source, u.direct, u.transposed);
        const OperandUse& d = u.direct;
        const OperandUse& t = u.transposed;
        expect_same_operand(direct, prepare_operand(u.source, d.spec, d.kind, d.side, false),
                            "as it is");
        expect_same_operand(transposed, prepare_operand(u.source, t.spec, t.kind, t.side, true),
                            "transposed");
      }
    }
  }
  set_layout_sharing(true);
}

TEST(OperandPair, ALinearLayerQuantizesEachSourceOnceWhereTheLayoutsShare) {
  // Counted through the "quantize" regions of one forward and backward: X, W and dY once each
  // under int8-tensor; twice each with the sharing off, or where blocks do not transpose
  // (int8-block's 1×128 X and dY; its 128×128 W still shares).
  const LinearCase c = make_case(7, 128, 256, 128);
  const auto quantize_calls = [&](const char* recipe, bool sharing) {
    set_layout_sharing(sharing);
    profiling::set_region_timing(true, c10::Device(c10::kCPU));
    (void)profiling::take_region_times();
    (void)run(c, parse_recipe(recipe).gemms);
    int64_t calls = 0;
    for (const profiling::RegionTime& r : profiling::take_region_times()) {
      if (r.key == "quantize") calls += r.calls;
    }
    profiling::set_region_timing(false, c10::Device(c10::kCPU));
    set_layout_sharing(true);
    return calls;
  };
  EXPECT_EQ(quantize_calls("int8-tensor", true), 3);
  EXPECT_EQ(quantize_calls("int8-tensor", false), 6);
  EXPECT_EQ(quantize_calls("int8-block", true), 5);
  EXPECT_EQ(quantize_calls("bf16", true), 0);
  // Per row both ways is one call per source too (the row pair), unless dY rounds
  // stochastically (a seed per layout: its two layouts apart).
  EXPECT_EQ(quantize_calls("int8-row", true), 3);
  EXPECT_EQ(quantize_calls("int8-row", false), 6);
  EXPECT_EQ(quantize_calls("int8-tensor:dy=row", true), 3);
  EXPECT_EQ(quantize_calls("int8-row:dy-rounding=stochastic", true), 4);
}

TEST(OperandPair, TheRowPairIsBothRowwiseQuantizations) {
  const at::Tensor x = torch::randn({64, 256});
  for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e5m2}) {
    const reference::QuantSpec spec{format, 1, 0};
    const auto [q, t] = quantize_rowwise_pair(x, spec);
    EXPECT_TRUE(torch::equal(q.values, kernels::quantize(x, spec, false).values));
    EXPECT_TRUE(torch::equal(q.scales, kernels::quantize(x, spec, false).scales));
    EXPECT_TRUE(torch::equal(t.values, kernels::quantize(x, spec, true).values));
    EXPECT_TRUE(torch::equal(t.scales, kernels::quantize(x, spec, true).scales));
    EXPECT_EQ(t.scales.sizes(), (std::vector<int64_t>{256, 1}));
  }
  EXPECT_THROW(quantize_rowwise_pair(x, {NumberFormat::int8, 1, 128}), c10::Error);
  EXPECT_THROW(quantize_rowwise_pair(x, {NumberFormat::int8, 1, 0, Rounding::stochastic}),
               c10::Error);
}

TEST(OperandPair, QuantizeWithTransposeTakesOnlyBlocksThatTranspose) {
  const at::Tensor x = torch::randn({64, 256});
  for (const reference::QuantSpec& spec : {reference::QuantSpec{NumberFormat::int8, 0, 0},
                                           reference::QuantSpec{NumberFormat::fp8_e4m3, 32, 32}}) {
    ASSERT_TRUE(transposes_exactly(spec));
    const auto [q, t] = quantize_with_transpose(x, spec);
    EXPECT_TRUE(torch::equal(t.values, quantize(x, spec, true).values));
    EXPECT_TRUE(torch::equal(t.scales, quantize(x, spec, true).scales));
  }
  try {
    quantize_with_transpose(x, {NumberFormat::int8, 1, 128});
    ADD_FAILURE() << "1x128 blocks do not transpose exactly";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("do not transpose exactly"),
              std::string::npos)
        << e.what_without_backtrace();
  }
}

// Relative error bounds that follow the formats. Per-tensor INT8 of a Gaussian operand of n
// elements has a relative RMS error near sqrt(2·ln n) / (127·sqrt(12)) ≈ 1 %, a product of two
// about 1.5 %; rows and blocks only lower it. FP8 rounds each element to 3 (E4M3) or 2 (E5M2)
// mantissa bits: about 3.6 % and 7.2 % RMS per element. Bounds: about twice the expected error.
struct RecipeBound {
  const char* recipe;
  double fprop, backward;
};

class EveryRecipe : public ::testing::TestWithParam<RecipeBound> {};

void PrintTo(const RecipeBound& b, std::ostream* os) {
  *os << b.recipe;
}

TEST_P(EveryRecipe, ForwardAndGradientsTrackTheExactLayer) {
  const RecipeBound bound = GetParam();
  for (int64_t seed : {2, 3}) {
    const LinearCase c = make_case(seed, 256, 384, 256);
    const Results truth = exact(c);
    const Results ours = run(c, parse_recipe(bound.recipe).gemms);
    const Results bf16 = run(c, LinearGemms::all_bf16());
    EXPECT_LT(relative_error(ours.y, truth.y), bound.fprop) << "fprop";
    EXPECT_LT(relative_error(ours.grad_x, truth.grad_x), bound.backward) << "dgrad";
    EXPECT_LT(relative_error(ours.grad_w, truth.grad_w), bound.backward) << "wgrad";
    // And it really quantizes: its error is well above BF16's.
    EXPECT_GT(relative_error(ours.y, truth.y), 2 * relative_error(bf16.y, truth.y));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Recipes, EveryRecipe,
    ::testing::Values(RecipeBound{"int8-tensor", 0.03, 0.03}, RecipeBound{"int8-row", 0.03, 0.03},
                      RecipeBound{"int8-block", 0.03, 0.03},
                      RecipeBound{"int8-fallback", 0.03, 0.03},
                      RecipeBound{"int8-block:k-block=256", 0.03, 0.03},
                      RecipeBound{"int8-fallback:k-block=512", 0.03, 0.03},
                      RecipeBound{"switchback", 0.03, 0.03},
                      RecipeBound{"int8-tensor:dy=row", 0.03, 0.03},
                      RecipeBound{"int8-tensor:dy=bf16", 0.03, 0.03},
                      RecipeBound{"int8-tensor:hadamard=64", 0.03, 0.03},
                      // Stochastic rounding's error is up to √3× that of
                      // rounding to nearest: the price of no bias.
                      RecipeBound{"int8-tensor:dy-rounding=stochastic", 0.03, 0.05},
                      RecipeBound{"fp8-tensor", 0.08, 0.15}, RecipeBound{"fp8-row", 0.08, 0.15},
                      RecipeBound{"fp8-block", 0.08, 0.15}),
    [](const auto& test_info) {
      std::string name = test_info.param.recipe;
      for (char& ch : name)
        ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

TEST(QuantizedLinear, FallbackComputesOutlierBlocksToAboutSixteenBits) {
  LinearCase c = make_case(4, 256, 384, 256);
  // Two outlier channels, 64× the rest, in a few tokens: each crushes the other 127 values of its
  // 1×128 block onto a 64× coarser INT8 grid. That is what the fallback is for.
  at::Tensor x = c.x.to(torch::kFloat);
  x.select(1, 5).select(-1, 130).mul_(64.0);
  x.select(1, 77).select(-1, 7).mul_(64.0);
  c.x = x.to(torch::kBFloat16);
  // The activation side alone: the exact X against the quantized W both recipes use.
  const at::Tensor x2 = c.x.reshape({-1, 384}).to(at::kDouble);
  const at::Tensor w_used =
      reference::dequantize(reference::quantize(c.w, {NumberFormat::int8, 128, 128}), at::kDouble);
  const at::Tensor truth = at::mm(x2, w_used.t());
  take_fallback_counts();
  const at::Tensor fallback =
      quantized_linear(c.x, c.w, recipe_by_name("int8-fallback").gemms, "probe")
          .reshape({-1, 256})
          .to(at::kFloat);
  const at::Tensor block =
      quantized_linear(c.x, c.w, recipe_by_name("int8-block").gemms).reshape({-1, 256});
  for (int64_t row : {5, 128 + 5, 77, 128 + 77}) {
    // bf16 output rounding (2⁻⁹ relative) is the floor; INT8 of a crushed block is far above it.
    const double with = relative_error(fallback[row], truth[row]);
    const double without = relative_error(block[row], truth[row]);
    EXPECT_LT(with, 0.005) << "row " << row;
    EXPECT_GT(without, 4 * with) << "row " << row;
  }
  const auto counts = take_fallback_counts();
  ASSERT_EQ(counts.count("probe.fprop"), 1U);
  EXPECT_EQ(counts.at("probe.fprop").fallback, 4);  // one block in each of the 4 tokens
  EXPECT_EQ(counts.at("probe.fprop").blocks, 256 * 3);
}

TEST(QuantizedLinear, PerGemmOverridesQuantizeOnlyTheNamedGemms) {
  const LinearCase c = make_case(5);
  const Results bf16 = run(c, LinearGemms::all_bf16());
  const Results mixed = run(c, parse_recipe("int8-tensor:wgrad=bf16").gemms);
  EXPECT_TRUE(torch::equal(mixed.grad_w, bf16.grad_w));
  EXPECT_FALSE(torch::equal(mixed.y, bf16.y));
  EXPECT_FALSE(torch::equal(mixed.grad_x, bf16.grad_x));
  const Results fprop_bf16 = run(c, parse_recipe("int8-row:fprop=bf16").gemms);
  EXPECT_TRUE(torch::equal(fprop_bf16.y, bf16.y));
  EXPECT_FALSE(torch::equal(fprop_bf16.grad_w, bf16.grad_w));
}

// Issue 23's dY ablations, each against its definition: dY kept in BF16 (a BF16 product with the
// rounded W or X), dY per token with W and X per tensor, dY rounded stochastically.
TEST(QuantizedLinear, DyAblationsAreExactlyTheirDefinitions) {
  const LinearCase c = make_case(8, 256, 384, 128);
  const at::Tensor x = c.x.reshape({-1, 384});
  const at::Tensor g = c.grad_y.reshape({-1, 128});
  const auto tensorwise = [](const at::Tensor& t) {
    return reference::quantize(t, {NumberFormat::int8, 0, 0});
  };
  const Results tensor = run(c, recipe_by_name("int8-tensor").gemms);

  const Results bf16 = run(c, parse_recipe("int8-tensor:dy=bf16").gemms);
  EXPECT_TRUE(torch::equal(bf16.y, tensor.y)) << "fprop untouched";
  const at::Tensor w_rounded = reference::dequantize(tensorwise(c.w), at::kBFloat16);
  const at::Tensor x_rounded = reference::dequantize(tensorwise(x), at::kBFloat16);
  // A BF16 product: FP32 products and sums, rounded once.
  const auto product = [](const at::Tensor& a, const at::Tensor& b) {
    return at::mm(a.to(at::kFloat), b.to(at::kFloat)).to(at::kBFloat16);
  };
  EXPECT_TRUE(torch::equal(bf16.grad_x.reshape({-1, 384}), product(g, w_rounded))) << "dgrad";
  EXPECT_TRUE(torch::equal(bf16.grad_w, product(g.t(), x_rounded))) << "wgrad";

  const Results row = run(c, parse_recipe("int8-tensor:dy=row").gemms);
  EXPECT_TRUE(torch::equal(row.y, tensor.y)) << "fprop untouched";
  const auto per_row = [](const at::Tensor& t) {
    return reference::quantize(t, {NumberFormat::int8, 1, 0});
  };
  EXPECT_TRUE(torch::equal(row.grad_x.reshape({-1, 384}),
                           reference::scaled_gemm(per_row(g), tensorwise(c.w.t()), at::kBFloat16)))
      << "dgrad: dY per token";
  EXPECT_TRUE(torch::equal(
      row.grad_w, reference::scaled_gemm(per_row(g.t()), tensorwise(x.t()), at::kBFloat16)))
      << "wgrad: dY per output channel";

  // The backward's one stochastic quantization (dY for both layouts) takes the first seed drawn.
  seed_stochastic_rounding(3);
  const uint64_t seed = next_rounding_seed();
  seed_stochastic_rounding(3);
  const Results sr = run(c, parse_recipe("int8-tensor:dy-rounding=stochastic").gemms);
  EXPECT_TRUE(torch::equal(sr.y, tensor.y)) << "fprop untouched";
  const reference::Quantized qg =
      reference::quantize(g, {NumberFormat::int8, 0, 0, Rounding::stochastic}, seed);
  EXPECT_TRUE(torch::equal(sr.grad_x.reshape({-1, 384}),
                           reference::scaled_gemm(qg, tensorwise(c.w.t()), at::kBFloat16)))
      << "dgrad";
  EXPECT_TRUE(torch::equal(sr.grad_w, reference::scaled_gemm(reference::transpose(qg),
                                                             tensorwise(x.t()), at::kBFloat16)))
      << "wgrad";
  // A replay from the same seed is the same; another seed is not.
  seed_stochastic_rounding(3);
  EXPECT_TRUE(torch::equal(run(c, parse_recipe("int8-tensor:dy-rounding=stochastic").gemms).grad_w,
                           sr.grad_w));
  seed_stochastic_rounding(4);
  EXPECT_FALSE(torch::equal(run(c, parse_recipe("int8-tensor:dy-rounding=stochastic").gemms).grad_w,
                            sr.grad_w));
}

// hadamard=<b>: dgrad's and wgrad's operands rotated along the summed dimension, then quantized;
// fprop untouched, and the products are those of the rotated operands.
TEST(QuantizedLinear, HadamardRotatedProductsAreTheirDefinition) {
  const LinearCase c = make_case(9, 256, 384, 128);
  const at::Tensor x = c.x.reshape({-1, 384});
  const at::Tensor g = c.grad_y.reshape({-1, 128});
  const auto q = [](const at::Tensor& t) {
    return reference::quantize(reference::hadamard_rotate(t, 64), {NumberFormat::int8, 0, 0});
  };
  const Results ours = run(c, parse_recipe("int8-tensor:hadamard=64").gemms);
  EXPECT_TRUE(torch::equal(ours.y, run(c, recipe_by_name("int8-tensor").gemms).y));
  EXPECT_TRUE(torch::equal(ours.grad_x.reshape({-1, 384}),
                           reference::scaled_gemm(q(g), q(c.w.t()), at::kBFloat16)))
      << "dgrad: rotated along the output features";
  EXPECT_TRUE(torch::equal(ours.grad_w, reference::scaled_gemm(q(g.t()), q(x.t()), at::kBFloat16)))
      << "wgrad: rotated along the tokens";
}

// Gradient accumulation's weight cache: the first forward quantizes W into it, and every forward
// after reads it (a W changed in between is not seen: the trainer clears the cache after each
// optimizer step) until it is cleared. The products are the bits the uncached layer computes.
TEST(QuantizedLinear, AWeightCacheIsReadUntilCleared) {
  const LinearCase c = make_case(9);
  const auto cached = [&](const at::Tensor& weight, const LinearGemms& gemms,
                          WeightQuantCache* cache, LinearAmaxHistories* histories = nullptr) {
    at::Tensor x = c.x.clone().requires_grad_(true);
    at::Tensor w = weight.clone().requires_grad_(true);
    at::Tensor y = quantized_linear(x, w, gemms, "probe", {}, histories, cache);
    y.backward(c.grad_y);
    return Results{y.detach(), x.grad(), w.grad()};
  };
  for (const char* recipe : {"int8-tensor", "int8-row", "int8-block"}) {
    const LinearGemms gemms = recipe_by_name(recipe).gemms;
    const Results plain = run(c, gemms);
    WeightQuantCache cache;
    const Results first = cached(c.w, gemms, &cache);
    EXPECT_TRUE(cache.filled && cache.has_dgrad) << recipe;
    EXPECT_TRUE(torch::equal(first.y, plain.y)) << recipe;
    EXPECT_TRUE(torch::equal(first.grad_x, plain.grad_x)) << recipe;
    EXPECT_TRUE(torch::equal(first.grad_w, plain.grad_w)) << recipe;

    const at::Tensor other = (c.w.to(at::kFloat) * 3).to(at::kBFloat16);
    const Results stale = cached(other, gemms, &cache);
    EXPECT_TRUE(torch::equal(stale.y, first.y)) << recipe << ": fprop read the cached W";
    EXPECT_TRUE(torch::equal(stale.grad_x, first.grad_x)) << recipe << ": dgrad read it too";
    cache.clear();
    const Results fresh = cached(other, gemms, &cache);
    EXPECT_FALSE(torch::equal(fresh.y, first.y)) << recipe;
    EXPECT_TRUE(torch::equal(fresh.y, run(LinearCase{c.x, other, c.grad_y}, gemms).y)) << recipe;
  }
  // Nothing to keep where no product quantizes W, or where W's scale follows a history.
  WeightQuantCache bf16_cache;
  (void)cached(c.w, LinearGemms::all_bf16(), &bf16_cache);
  EXPECT_FALSE(bf16_cache.filled);
  WeightQuantCache delayed_cache;
  LinearAmaxHistories histories(4);
  (void)cached(c.w, parse_recipe("int8-tensor:amax-history=4").gemms, &delayed_cache, &histories);
  EXPECT_FALSE(delayed_cache.filled);
}

// quantize_weight makes the filled cache the forward would fill itself: read by that forward, the
// products are the uncached layer's bits. Without dgrad's layout, a forward whose X requires grad
// quantizes W again; under requantize_w none is made (backward makes it from W). None where no
// cache applies.
TEST(QuantizedLinear, AWeightQuantizedBeforehandIsTheForwardsOwn) {
  const LinearCase c = make_case(12);
  const auto with = [&](const LinearGemms& gemms, WeightQuantCache cache) {
    at::Tensor x = c.x.clone().requires_grad_(true);
    at::Tensor w = c.w.clone().requires_grad_(true);
    at::Tensor y = quantized_linear(x, w, gemms, "probe", {}, nullptr, &cache);
    y.backward(c.grad_y);
    return std::make_pair(Results{y.detach(), x.grad(), w.grad()}, cache);
  };
  for (const char* recipe : {"int8-tensor", "int8-row", "int8-block", "fp8-tensor",
                             "int8-tensor:dy=row", "int8-row:hadamard=64"}) {
    const LinearGemms gemms = parse_recipe(recipe).gemms;
    const Results plain = run(c, gemms);
    for (const bool dgrad : {true, false}) {
      std::optional<WeightQuantCache> q = quantize_weight(c.w, gemms, dgrad);
      ASSERT_TRUE(q) << recipe;
      EXPECT_TRUE(q->filled) << recipe;
      EXPECT_EQ(q->has_dgrad, dgrad) << recipe;
      EXPECT_TRUE(q->fprop.q) << recipe;
      const auto [ours, after] = with(gemms, *q);
      EXPECT_TRUE(torch::equal(ours.y, plain.y)) << recipe << " dgrad " << dgrad;
      EXPECT_TRUE(torch::equal(ours.grad_x, plain.grad_x)) << recipe << " dgrad " << dgrad;
      EXPECT_TRUE(torch::equal(ours.grad_w, plain.grad_w)) << recipe << " dgrad " << dgrad;
      // Read as it was, or (no dgrad layout) made again whole by the forward.
      EXPECT_TRUE(after.has_dgrad) << recipe;
    }
  }
  LinearGemms again = recipe_by_name("int8-tensor").gemms;
  again.requantize_w = true;
  const std::optional<WeightQuantCache> q = quantize_weight(c.w, again, true);
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->has_dgrad);
  const auto [ours, after] = with(again, *q);
  const Results plain = run(c, again);
  EXPECT_TRUE(torch::equal(ours.y, plain.y));
  EXPECT_TRUE(torch::equal(ours.grad_x, plain.grad_x));
  EXPECT_FALSE(after.has_dgrad);

  EXPECT_FALSE(quantize_weight(c.w, LinearGemms::all_bf16(), true));
  EXPECT_FALSE(quantize_weight(c.w, parse_recipe("int8-tensor:amax-history=4").gemms, true));
}

// With add_into_grad, a master whose gradient is defined gets the wgrad product added into it in
// place (the bits of autograd's own sum: the product, then one FP32 add) and autograd gets no
// gradient for it; a master without one gets it from autograd as before.
TEST(QuantizedLinear, AddsItsWeightGradientIntoADefinedOne) {
  const LinearCase c = make_case(10);
  const at::Tensor before = torch::randn(c.w.sizes()) * 0.1;
  for (const char* recipe : {"bf16", "int8-tensor", "int8-row", "int8-block", "int8-fallback",
                             "int8-tensor:dy=bf16", "switchback"}) {
    const LinearGemms gemms = parse_recipe(recipe).gemms;
    // A master (FP32 leaf) with the gradient `start`, and how many defined gradients autograd
    // handed it through a hook.
    struct Master {
      at::Tensor t;
      int handed = 0;
    };
    const auto backward = [&](const at::Tensor& start, bool add) {
      auto m = std::make_shared<Master>();
      m->t = c.w.to(at::kFloat).requires_grad_(true);
      if (start.defined()) m->t.mutable_grad() = start.clone();
      m->t.register_hook([m = m.get()](const at::Tensor& g) {
        if (g.defined()) ++m->handed;
      });
      at::Tensor x = c.x.clone().requires_grad_(true);
      quantized_linear(x, c.w, gemms, "probe", m->t, nullptr, nullptr, add).backward(c.grad_y);
      return m;
    };
    const auto alone = backward({}, true);
    EXPECT_EQ(alone->handed, 1) << recipe << ": nothing to add into, so autograd's";
    const at::Tensor product = alone->t.grad();
    const auto plain = backward(before, false);
    EXPECT_EQ(plain->handed, 1) << recipe;
    EXPECT_TRUE(torch::equal(plain->t.grad(), before + product)) << recipe;
    const auto fused = backward(before, true);
    EXPECT_EQ(fused->handed, 0) << recipe << ": the product added itself";
    EXPECT_TRUE(torch::equal(fused->t.grad(), plain->t.grad())) << recipe;
  }
}

TEST(QuantizedLinear, NoGradientIsComputedForAnInputThatNeedsNone) {
  const LinearCase c = make_case(6);
  at::Tensor w = c.w.clone().requires_grad_(true);
  at::Tensor y = quantized_linear(c.x, w, recipe_by_name("int8-tensor").gemms);
  y.backward(c.grad_y);
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(c.x.grad().defined());
}

TEST(QuantizedLinear, RejectsMismatchedShapes) {
  const LinearCase c = make_case(7);
  EXPECT_THROW(quantized_linear(c.x, c.w.t(), LinearGemms::all_bf16()), c10::Error);
}

float amax_of(const at::Tensor& x) {
  return x.abs().max().to(at::kFloat).item<float>();
}

bool same_quantization(const Quantized& a, const Quantized& b) {
  return a.values.to(at::kFloat).equal(b.values.to(at::kFloat)) && a.scales.equal(b.scales);
}

// Delayed scaling: the first quantization of a history finds its own amax; each later one is
// scaled by the largest of the last n recorded amaxes (its own recorded after), saturating.
TEST(DelayedScaling, ScalesByTheLargestOfTheLastNAmaxesAndRecordsItsOwn) {
  torch::manual_seed(9);
  const double sizes[] = {1.0, 4.0, 0.5, 0.5, 0.25};
  std::vector<at::Tensor> xs;
  for (const double size : sizes)
    xs.push_back((torch::randn({24, 40}) * size).to(at::kBFloat16));
  AmaxHistory history(2);
  const QuantSpec spec{NumberFormat::int8, 0, 0};
  EXPECT_TRUE(
      same_quantization(quantize(xs[0], spec, false, &history), reference::quantize(xs[0], spec)));
  // Scaled by the history's largest: x0's, then max(x0, x1), max(x1, x2), max(x2, x3).
  const float by[] = {amax_of(xs[0]), amax_of(xs[1]), amax_of(xs[1]),
                      std::max(amax_of(xs[2]), amax_of(xs[3]))};
  for (size_t i = 1; i < xs.size(); ++i) {
    const Quantized q = quantize(xs[i], spec, false, &history);
    EXPECT_TRUE(same_quantization(q, reference::quantize_by_amax(xs[i], spec.format, by[i - 1])))
        << "quantization " << i;
  }
  EXPECT_EQ(history.recorded(), 5);
  // x1 (4× the others) saturated: its scale came from x0.
  EXPECT_LT(by[0], amax_of(xs[1]));

  // Both layouts from one pass: the transposed copy is the transpose, and one amax is recorded.
  AmaxHistory pair_history(4);
  const auto [q, qt] = quantize_with_transpose(xs[0], spec, &pair_history);
  EXPECT_TRUE(same_quantization(qt, reference::transpose(q)));
  EXPECT_EQ(pair_history.recorded(), 1);
  EXPECT_THROW(quantize(xs[0], {NumberFormat::int8, 1, 0}, false, &history), c10::Error);
}

// A layer whose recipe scales by a history trains through it, and refuses to run without one.
TEST(DelayedScaling, TheLinearLayerKeepsAHistoryPerOperand) {
  const LinearCase c = make_case(12);
  const LinearGemms gemms = parse_recipe("int8-tensor:amax-history=3").gemms;
  EXPECT_THROW(quantized_linear(c.x, c.w, gemms), c10::Error);
  LinearAmaxHistories histories(3);
  for (int step = 0; step < 2; ++step) {
    const at::Tensor x = c.x.detach().requires_grad_(true);
    const at::Tensor w = c.w.detach().requires_grad_(true);
    const at::Tensor y = quantized_linear(x, w, gemms, "fc", {}, &histories);
    y.backward(c.grad_y);
    const at::Tensor exact = at::matmul(c.x.to(at::kFloat), c.w.to(at::kFloat).t());
    EXPECT_LT(relative_error(y, exact), 0.02) << "step " << step;
    EXPECT_LT(relative_error(x.grad(), at::matmul(c.grad_y.to(at::kFloat), c.w.to(at::kFloat))),
              0.03)
        << "step " << step;
  }
  EXPECT_EQ(histories.x.recorded(), 2);
  EXPECT_EQ(histories.w.recorded(), 2);
  EXPECT_EQ(histories.dy.recorded(), 2);
}

// dy=row under delayed scaling: X and W keep histories, dY is scaled per row (per token in dgrad,
// per channel in wgrad) by its own amaxes and keeps none. A history's first step scales by each
// operand's own amax, so it is dy=row's dynamic step, bit for bit.
TEST(DelayedScaling, DyPerRowKeepsNoHistoryBesideXAndW) {
  const LinearCase c = make_case(13);
  const LinearGemms delayed = parse_recipe("int8-tensor:dy=row,amax-history=3").gemms;
  const LinearGemms dynamic = parse_recipe("int8-tensor:dy=row").gemms;
  LinearAmaxHistories histories(3);
  for (int step = 0; step < 2; ++step) {
    const at::Tensor x = c.x.detach().requires_grad_(true);
    const at::Tensor w = c.w.detach().requires_grad_(true);
    const at::Tensor y = quantized_linear(x, w, delayed, "fc", {}, &histories);
    y.backward(c.grad_y);
    if (step == 0) {
      const at::Tensor x0 = c.x.detach().requires_grad_(true);
      const at::Tensor w0 = c.w.detach().requires_grad_(true);
      const at::Tensor y0 = quantized_linear(x0, w0, dynamic, "fc");
      y0.backward(c.grad_y);
      EXPECT_TRUE(y.equal(y0));
      EXPECT_TRUE(x.grad().equal(x0.grad()));
      EXPECT_TRUE(w.grad().equal(w0.grad()));
    }
  }
  EXPECT_EQ(histories.x.recorded(), 2);
  EXPECT_EQ(histories.w.recorded(), 2);
  EXPECT_EQ(histories.dy.recorded(), 0);
}

}  // namespace
}  // namespace lpbench::kernels
