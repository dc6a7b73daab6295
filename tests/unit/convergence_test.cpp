// The parity rule on synthetic final losses: inside BF16's band plus the tolerance, outside it,
// a diverged run, one BF16 seed (said so), and no BF16 at all.
#include <gtest/gtest.h>

#include <cmath>

#include "reports/convergence.h"

namespace lpbench::reports {
namespace {

SeedResult seed(const std::string& recipe, uint64_t s, double loss,
                store::RunStatus status = store::RunStatus::ok) {
  SeedResult r;
  r.recipe = recipe;
  r.seed = s;
  r.final_loss = loss;
  r.status = status;
  return r;
}

const RecipeVerdict& find(const std::vector<RecipeVerdict>& verdicts, const std::string& recipe) {
  for (const auto& v : verdicts) {
    if (v.recipe == recipe) return v;
  }
  throw std::runtime_error("no verdict for " + recipe);
}

TEST(Parity, InsideTheBandPlusToleranceIsParityAndAboveItIsNot) {
  const std::vector<SeedResult> results{
      seed("bf16", 0, 4.00),        seed("bf16", 1, 4.04),        seed("bf16", 2, 4.02),
      seed("int8-tensor", 0, 4.07), seed("int8-tensor", 1, 4.06), seed("int8-tensor", 2, 4.08),
      seed("fp8-tensor", 0, 4.10),  seed("fp8-tensor", 1, 4.12),  seed("fp8-tensor", 2, 4.14)};
  const auto verdicts = judge(results, ParityRule{0.01});
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_EQ(find(verdicts, "bf16").verdict, Parity::baseline);
  EXPECT_DOUBLE_EQ(*find(verdicts, "bf16").max, 4.04);
  // 4.07 <= 4.04 * 1.01 = 4.0804
  EXPECT_EQ(find(verdicts, "int8-tensor").verdict, Parity::parity);
  EXPECT_NEAR(*find(verdicts, "int8-tensor").gap_pct, 100.0 * (4.07 - 4.02) / 4.02, 1e-9);
  // 4.12 > 4.0804
  EXPECT_EQ(find(verdicts, "fp8-tensor").verdict, Parity::outside);
  EXPECT_FALSE(all_at_parity(verdicts));
}

TEST(Parity, ALowerLossIsParityAndADivergedSeedIsNot) {
  const std::vector<SeedResult> results{seed("bf16", 0, 4.0), seed("int8-block", 0, 3.9),
                                        seed("int8-fallback", 0, 4.0),
                                        seed("int8-fallback", 1, NAN, store::RunStatus::diverged)};
  const auto verdicts = judge(results, ParityRule{0.01});
  EXPECT_EQ(find(verdicts, "int8-block").verdict, Parity::parity);
  EXPECT_EQ(find(verdicts, "int8-fallback").verdict, Parity::diverged);
}

TEST(Parity, OneBf16SeedIsJudgedAndTheOutputSaysTheBandIsAPoint) {
  const std::vector<SeedResult> results{seed("bf16", 0, 4.0), seed("int8-tensor", 0, 4.03)};
  const ParityRule rule{0.01};
  const auto verdicts = judge(results, rule);
  EXPECT_EQ(find(verdicts, "int8-tensor").verdict, Parity::parity);
  const std::string text = render_verdicts(verdicts, rule);
  EXPECT_NE(text.find("BF16 ran 1 seed: its band is a point"), std::string::npos) << text;
  EXPECT_NE(text.find("plus 1.0 %"), std::string::npos) << text;
  EXPECT_TRUE(all_at_parity(verdicts));
}

TEST(Parity, AnInterruptedRunIsIncompleteNotJudgedOnItsEarlierLoss) {
  SeedResult stopped = seed("int8-row", 0, 2.80, store::RunStatus::interrupted);
  stopped.steps_done = 1875;
  stopped.steps_planned = 2000;
  const auto verdicts = judge({seed("bf16", 0, 2.766), stopped}, ParityRule{0.01});
  EXPECT_EQ(find(verdicts, "int8-row").verdict, Parity::incomplete);
  EXPECT_NE(find(verdicts, "int8-row").why.find("stopped at step 1875 of 2000"), std::string::npos)
      << find(verdicts, "int8-row").why;
  EXPECT_FALSE(find(verdicts, "int8-row").gap_pct.has_value());
  EXPECT_FALSE(all_at_parity(verdicts));
}

TEST(Parity, WithoutBf16ThereIsNoVerdict) {
  const auto verdicts = judge({seed("int8-tensor", 0, 4.0)}, ParityRule{});
  EXPECT_EQ(find(verdicts, "int8-tensor").verdict, Parity::no_data);
  EXPECT_FALSE(all_at_parity(verdicts));
}

}  // namespace
}  // namespace lpbench::reports
