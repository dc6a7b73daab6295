// The kernel suite's case table, validation, row building and report table, on the CPU.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <set>

#include "base/errors.h"
#include "harness/kernel_bench/case_runner.h"
#include "harness/kernel_bench/case_table.h"
#include "harness/kernel_bench/result_record.h"
#include "harness/kernel_bench/validation.h"
#include "kernels/torch/quantize.h"
#include "reports/kernel_table.h"
#include "workloads/models/model_config.h"

namespace lpbench::kernel_bench {
namespace {

std::vector<KernelCase> llama_gemms(std::vector<int64_t> tokens = {4096}) {
  CaseFilter filter;
  filter.models = {"llama2-7b"};
  filter.tokens = std::move(tokens);
  filter.ops = {Op::gemm};
  return kernel_cases(filter);
}

const KernelCase& find(const std::vector<KernelCase>& cases, const std::string& name) {
  for (const KernelCase& c : cases) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no case " + name);
}

TEST(KernelCaseTable, CountsOfTheDefaultTable) {
  // 5 linear parts × 3 GEMMs; bf16 once, then 4 quantized recipes × 2 variants.
  EXPECT_EQ(llama_gemms().size(), 15u * (1 + 4 * 2));
  EXPECT_EQ(llama_gemms({4096, 16384}).size(), 2u * 15 * 9);
  EXPECT_EQ(seed_models().size(), 6u);
  CaseFilter all;
  all.ops = {Op::gemm};
  EXPECT_EQ(kernel_cases(all).size(), 6u * 15 * 9);

  CaseFilter one_variant;
  one_variant.models = {"llama2-7b"};
  one_variant.ops = {Op::gemm};
  one_variant.recipes = {"int8-tensor"};
  one_variant.variants = {Variant::prequantized};
  EXPECT_EQ(kernel_cases(one_variant).size(), 15u * 2) << "bf16 twin + int8-tensor";
}

TEST(KernelCaseTable, Llama2ShapesFollowTheModel) {
  const workloads::ModelConfig& model = workloads::builtin_model("llama2-7b");
  const int64_t h = model.hidden_size;        // 4096
  const int64_t f = model.intermediate_size;  // 11008
  const int64_t q = model.num_heads * model.head_dim;
  const int64_t kv = model.num_kv_heads * model.head_dim;
  const std::vector<KernelCase> cases = llama_gemms();
  const int64_t t = 4096;
  struct Expect {
    std::string part, kind;
    int64_t m, n, k;
  };
  const std::vector<Expect> expected{{"qkv", "fprop", t, q + 2 * kv, h},
                                     {"qkv", "dgrad", t, h, q + 2 * kv},
                                     {"qkv", "wgrad", q + 2 * kv, h, t},
                                     {"out", "fprop", t, h, q},
                                     {"gate_up", "fprop", t, 2 * f, h},
                                     {"down", "fprop", t, h, f},
                                     {"down", "wgrad", h, f, t},
                                     {"output", "fprop", t, model.vocab_size, h},
                                     {"output", "dgrad", t, h, model.vocab_size}};
  for (const Expect& e : expected) {
    for (const std::string recipe : {"bf16", "int8-row/prequantized"}) {
      const KernelCase& c =
          find(cases, "gemm/llama2-7b/" + e.part + "/" + e.kind + "/T4096/" + recipe);
      EXPECT_EQ(c.m, e.m) << c.name;
      EXPECT_EQ(c.n, e.n) << c.name;
      EXPECT_EQ(c.k, e.k) << c.name;
    }
  }
  EXPECT_EQ(q + 2 * kv, 3 * 4096);
  const KernelCase& fprop = find(cases, "gemm/llama2-7b/qkv/fprop/T4096/int8-tensor/prequantized");
  EXPECT_FALSE(fprop.lhs_transposed || fprop.rhs_transposed);
  const KernelCase& dgrad = find(cases, "gemm/llama2-7b/qkv/dgrad/T4096/int8-tensor/prequantized");
  EXPECT_FALSE(dgrad.lhs_transposed);
  EXPECT_TRUE(dgrad.rhs_transposed);
  const KernelCase& wgrad = find(cases, "gemm/llama2-7b/qkv/wgrad/T4096/int8-tensor/prequantized");
  EXPECT_TRUE(wgrad.lhs_transposed && wgrad.rhs_transposed);
  EXPECT_EQ(wgrad.flops(), 2.0 * (3 * 4096) * 4096 * 4096);
}

TEST(KernelCaseTable, EveryQuantizedCaseHasItsBf16TwinAndNamesAreUnique) {
  const std::vector<KernelCase> cases = llama_gemms({4096, 16384});
  std::set<std::string> names;
  for (const KernelCase& c : cases) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    if (c.recipe == "bf16") {
      EXPECT_EQ(c.variant, Variant::none);
      continue;
    }
    EXPECT_NE(c.variant, Variant::none);
    const bool twin = std::any_of(cases.begin(), cases.end(), [&](const KernelCase& b) {
      return b.recipe == "bf16" && b.part == c.part && b.kind == c.kind && b.m == c.m &&
             b.n == c.n && b.k == c.k;
    });
    EXPECT_TRUE(twin) << c.name;
  }
}

TEST(KernelCaseTable, QuantizeCasesOnePerShapeAndScheme) {
  CaseFilter filter;
  filter.models = {"llama2-7b"};
  filter.ops = {Op::quantize};
  filter.recipes = {"int8-block"};
  const std::vector<KernelCase> cases = kernel_cases(filter);
  // Activations [4096, 4096] (qkv, out, gate_up, output share it) and [4096, 11008] at 1×128;
  // five weights at 128×128, each also with its transpose from the same pass (square blocks).
  ASSERT_EQ(cases.size(), 2u + 5u + 5u);
  const KernelCase& x = find(cases, "quantize/llama2-7b/4096x4096/int8-block/1x128");
  EXPECT_EQ(x.part, "x.qkv,x.out,x.gate_up,x.output");
  EXPECT_FALSE(x.with_transpose);
  const KernelCase& w = find(cases, "quantize/llama2-7b/32000x4096/int8-block/128x128");
  EXPECT_EQ(w.part, "w.output");
  EXPECT_EQ(w.quant.block_rows, 128);
  EXPECT_DOUBLE_EQ(w.bytes(), 32000.0 * 4096 * 3 + 4.0 * 250 * 32);
  const KernelCase& wt = find(cases, "quantize/llama2-7b/32000x4096/int8-block/128x128+transpose");
  EXPECT_TRUE(wt.with_transpose);
  EXPECT_EQ(wt.part, "w.output");
  EXPECT_DOUBLE_EQ(wt.bytes(), 32000.0 * 4096 * 4 + 2 * 4.0 * 250 * 32);
  // Tensorwise transposes exactly too. One scale per tensor makes X [4096, 4096] and out's W
  // one case, and X [4096, 11008] and down's W another: five shapes, each with its twin, which
  // names the same operands.
  filter.recipes = {"int8-tensor"};
  const std::vector<KernelCase> tensor = kernel_cases(filter);
  ASSERT_EQ(tensor.size(), 2u * 5u);
  EXPECT_EQ(find(tensor, "quantize/llama2-7b/4096x4096/int8-tensor/tensor+transpose").part,
            "x.qkv,x.out,x.gate_up,x.output,w.out");
  // Per row, each operand also has its row pair (X per row, Xᵀ per row of Xᵀ: one call), whose
  // scales are a row's of X and a row's of Xᵀ.
  filter.recipes = {"int8-row"};
  const std::vector<KernelCase> row = kernel_cases(filter);
  const KernelCase& pair = find(row, "quantize/llama2-7b/4096x11008/int8-row/row+transpose");
  EXPECT_TRUE(pair.with_transpose);
  EXPECT_DOUBLE_EQ(pair.bytes(), 4096.0 * 11008 * 4 + 4.0 * (4096 + 11008));
  EXPECT_EQ(row.size() % 2, 0u);
}

TEST(KernelCaseTable, BadFiltersAreInputErrors) {
  CaseFilter filter;
  filter.models = {"llama9"};
  EXPECT_THROW(kernel_cases(filter), InputError);
  filter.models = {"tiny"};
  filter.tokens = {0};
  EXPECT_THROW(kernel_cases(filter), InputError);
  filter.tokens = {16};
  filter.recipes = {"int4"};
  EXPECT_THROW(kernel_cases(filter), InputError);
  EXPECT_THROW(parse_variant("postquantized"), InputError);
}

TEST(KernelValidation, ProductWithinToleranceAndAWrongOneRejected) {
  torch::manual_seed(3);
  const at::Tensor x = torch::randn({64, 256}).to(torch::kBFloat16);
  const at::Tensor w = (torch::randn({96, 256}) * 0.05).to(torch::kBFloat16);
  const kernels::Recipe& recipe = kernels::recipe_by_name("int8-row");
  const kernels::GemmSpec& spec = recipe.gemms.fprop;
  const auto a =
      kernels::prepare_operand(x, spec, kernels::GemmKind::fprop, kernels::Side::lhs, false);
  const auto b =
      kernels::prepare_operand(w, spec, kernels::GemmKind::fprop, kernels::Side::rhs, false);
  const at::Tensor c = kernels::gemm_nt(a, b, spec, at::kBFloat16);
  const Check good = check_product(c, a, b, spec);
  EXPECT_TRUE(good.ok) << good.reason;
  EXPECT_LT(good.error, 5e-3);

  // One row off, as a wrong scale or a misplaced tile would leave it.
  at::Tensor wrong = c.clone();
  wrong[10] = wrong[10] * 1.02 + 0.3;
  const Check bad = check_product(wrong, a, b, spec, kProductTolerance, 64);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.reason.find("exceeds the tolerance"), std::string::npos) << bad.reason;

  const kernels::reference::QuantSpec qs{kernels::NumberFormat::int8, 1, 128};
  const auto q = kernels::quantize(x, qs);
  EXPECT_TRUE(check_quantized(q, kernels::reference::quantize(x, qs)).ok);
  auto flipped = q;
  flipped.values = q.values.clone();
  flipped.values[0][0] = flipped.values[0][0] + 1;
  const Check qbad = check_quantized(flipped, kernels::reference::quantize(x, qs));
  EXPECT_FALSE(qbad.ok);
  EXPECT_NE(qbad.reason.find("1 of 16384 values"), std::string::npos) << qbad.reason;
}

TEST(KernelCaseRunner, TinyCasesValidateOnTheCpuAndFp8IsUnsupported) {
  CaseFilter filter;
  filter.models = {"tiny"};
  filter.tokens = {16};
  filter.recipes = {"int8-tensor", "int8-block", "fp8-tensor"};
  const std::vector<KernelCase> cases = kernel_cases(filter);
  const DeviceInfo cpu = device_info(torch::Device(torch::kCPU));
  EXPECT_FALSE(cpu.l2_bytes);
  int validated = 0;
  for (const KernelCase& c : cases) {
    const int64_t sets = buffer_sets_for(c, cpu, 0);
    EXPECT_EQ(sets, kCpuBufferSets);
    const auto why = unsupported_reason(c, cpu, sets);
    if (c.recipe == "fp8-tensor") {
      ASSERT_TRUE(why) << c.name;
      EXPECT_NE(why->find("FP8"), std::string::npos);
      continue;
    }
    ASSERT_FALSE(why) << c.name << ": " << *why;
    PreparedCase prepared(c, cpu, sets, 7);
    EXPECT_TRUE(prepared.check().ok) << c.name << ": " << prepared.check().reason;
    EXPECT_FALSE(prepared.backend().empty());
    prepared.run_pass();
    ++validated;
  }
  EXPECT_GT(validated, 40);
}

TEST(KernelResultRecord, StatisticsOfTheSamplesAndNoFiguresWhenSkipped) {
  KernelCase c = llama_gemms().front();  // bf16 qkv fprop 4096×12288×4096
  CaseOutcome outcome;
  for (int i = 10; i >= 1; --i)
    outcome.samples_ms.push_back(i);
  outcome.backend = "cublas-bf16";
  outcome.buffer_sets = 3;
  SuiteSettings settings;
  settings.device = "cuda:0";
  settings.iterations = 10;
  const store::KernelResultRecord r = make_record(c, outcome, settings, 5, "NVIDIA H100");
  EXPECT_EQ(r.status, "ok");
  EXPECT_EQ(r.samples, 10);
  // numpy: median 5.5, percentile 10 → 1.9, percentile 90 → 9.1 for 1..10.
  EXPECT_DOUBLE_EQ(*r.median_ms, 5.5);
  EXPECT_NEAR(*r.p10_ms, 1.9, 1e-12);
  EXPECT_NEAR(*r.p90_ms, 9.1, 1e-12);
  EXPECT_NEAR(*r.tflops, 2.0 * 4096 * 12288 * 4096 / 5.5e-3 / 1e12, 1e-9);
  EXPECT_NEAR(*r.gb_s, c.bytes() / 5.5e-3 / 1e9, 1e-9);
  EXPECT_EQ(r.gemm.value_or(""), "fprop");
  EXPECT_EQ(r.variant, "none");
  EXPECT_NE(r.config_json.find("\"buffer_sets\":3"), std::string::npos) << r.config_json;

  CaseOutcome skipped;
  skipped.status = "skipped";
  skipped.reason = "fp8-tensor needs FP8 tensor cores";
  const store::KernelResultRecord s = make_record(c, skipped, settings, 5, std::nullopt);
  EXPECT_EQ(s.status, "skipped");
  EXPECT_EQ(s.reason.value_or(""), skipped.reason);
  EXPECT_FALSE(s.median_ms || s.tflops || s.gb_s);
  EXPECT_EQ(s.samples, 0);
}

// A timed llama2-7b result of `op` under `recipe`, as the suite stores it.
store::KernelResultRecord timed_result(std::string op, std::string recipe, double median,
                                       double p10, double p90) {
  store::KernelResultRecord r;
  r.sweep_id = 1;
  r.op = std::move(op);
  r.model = "llama2-7b";
  r.recipe = std::move(recipe);
  r.backend = "x";
  r.m = 4096;
  r.n = 12288;
  r.status = "ok";
  r.samples = 10;
  r.median_ms = median;
  r.p10_ms = p10;
  r.p90_ms = p90;
  return r;
}

TEST(KernelTable, SpeedupAgainstTheTwinWithAVerdictFromTheSpread) {
  auto row = [](std::string recipe, std::string variant, double median, double p10, double p90) {
    store::KernelResultRecord r = timed_result("gemm", std::move(recipe), median, p10, p90);
    r.part = "qkv";
    r.gemm = "fprop";
    r.variant = std::move(variant);
    r.k = 4096;
    r.tflops = 400.0;
    return r;
  };
  std::vector<store::KernelResultRecord> rows{
      row("bf16", "none", 2.0, 1.9, 2.1), row("int8-tensor", "prequantized", 1.0, 0.95, 1.05),
      row("int8-tensor", "with_quantization", 1.9, 1.8, 2.0)};
  rows.push_back(row("fp8-tensor", "prequantized", 0, 0, 0));
  rows.back().status = "skipped";
  rows.back().median_ms.reset();
  rows.back().reason = "fp8-tensor needs FP8 tensor cores";
  const std::string table = reports::render_kernel_table(rows);
  EXPECT_NE(table.find("1.00× (twin)"), std::string::npos) << table;
  EXPECT_NE(table.find("2.00× faster"), std::string::npos) << table;
  EXPECT_NE(table.find("1.05× same"), std::string::npos) << table;
  EXPECT_NE(table.find("skipped [1]"), std::string::npos) << table;
  EXPECT_NE(table.find("[1] fp8-tensor needs FP8 tensor cores"), std::string::npos) << table;
  EXPECT_EQ(reports::render_kernel_table({}), "");
}

TEST(KernelTable, QuantizeRowsNameTheirBlocksAndWhetherTheyWroteTheTranspose) {
  auto row = [](std::string name) {
    store::KernelResultRecord r = timed_result("quantize", "int8-tensor", 0.05, 0.05, 0.05);
    r.name = std::move(name);
    r.gb_s = 900.0;
    return r;
  };
  const std::string table = reports::render_kernel_table(
      {row("quantize/llama2-7b/4096x4096/int8-tensor/tensor"),
       row("quantize/llama2-7b/4096x4096/int8-tensor/tensor+transpose")});
  EXPECT_NE(table.find("| tensor | X        |"), std::string::npos) << table;
  EXPECT_NE(table.find("| tensor | X and Xᵀ |"), std::string::npos) << table;
}

}  // namespace
}  // namespace lpbench::kernel_bench
