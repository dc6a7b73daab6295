// The "Quantization diagnostics" section on recorded figures made up here: names split from the
// right, the worst operands picked by SQNR and by flushed share, first step against last.
#include <gtest/gtest.h>

#include "reports/diagnostics_report.h"

namespace lpbench::reports {
namespace {

TEST(DiagnosticsReport, NamesSplitFromTheRightSinceModulesHoldDots) {
  const auto parsed = parse_diagnostic_name("diag.layers.3.attn.qkv.dgrad.dy.flush_share");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->first.module, "layers.3.attn.qkv");
  EXPECT_EQ(parsed->first.gemm, "dgrad");
  EXPECT_EQ(parsed->first.operand, "dy");
  EXPECT_EQ(parsed->second, "flush_share");
  EXPECT_FALSE(parse_diagnostic_name("fallback.layers.0.mlp.down.fprop.share").has_value());
  EXPECT_FALSE(parse_diagnostic_name("diag.fprop.x.sqnr_db").has_value());  // no module
}

OperandFigures figures(double sqnr_db, double flush_share) {
  OperandFigures f;
  f.sqnr_db = sqnr_db;
  f.flush_share = flush_share;
  f.clip_share = 0.0;
  f.amax = 1.0;
  f.scale = 1.0 / 127.0;
  return f;
}

TEST(DiagnosticsReport, WorstOperandsByLowestSqnrAndMostFlushedFirstToLast) {
  RunSummary summary;
  summary.run.recipe = "int8-tensor";
  summary.run.workload = "model:tiny";
  RunDiagnostics run{&summary, {}};
  // Ten operands: dy of layer i has SQNR 10 + i dB at the last step, 40 dB at the first; x
  // operands are good but one (layer 9's) flushes the most.
  for (int64_t step : {0, 10}) {
    for (int i = 0; i < 10; ++i) {
      const std::string module = "layers." + std::to_string(i) + ".mlp.down";
      run.steps[step][module + ".dgrad.dy"] =
          figures(step == 0 ? 40.0 : 10.0 + i, step == 0 ? 0.01 : 0.5);
      run.steps[step][module + ".fprop.x"] = figures(45.0, i == 9 && step == 10 ? 0.9 : 0.0);
    }
  }
  const auto sections = diagnostics_sections({run});
  ASSERT_EQ(sections.size(), 1U);
  const std::string worst = sections[0].worst.markdown();
  // The five lowest SQNRs, then the most flushed ones not already shown.
  EXPECT_NE(worst.find("`layers.0.mlp.down.dgrad.dy`"), std::string::npos) << worst;
  EXPECT_NE(worst.find("40.0 → 10.0"), std::string::npos) << worst;
  EXPECT_NE(worst.find("`layers.4.mlp.down.dgrad.dy`"), std::string::npos) << worst;
  EXPECT_EQ(worst.find("`layers.5.mlp.down.dgrad.dy`"), std::string::npos) << worst;
  EXPECT_NE(worst.find("`layers.9.mlp.down.fprop.x`"), std::string::npos) << worst;
  EXPECT_NE(worst.find("0.00 % → 90.00 %"), std::string::npos) << worst;

  const std::string per_step = sections[0].per_step.markdown();
  // Median SQNR by kind x / w / dy at the last step: 45, none, 14.5.
  EXPECT_NE(per_step.find("45.0 / — / 14.5"), std::string::npos) << per_step;
  EXPECT_NE(per_step.find("10.0 `layers.0.mlp.down.dgrad.dy`"), std::string::npos) << per_step;
}

}  // namespace
}  // namespace lpbench::reports
