#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/stats/shift_test.h"

namespace lpbench::stats {
namespace {

TEST(NormalQuantile, MatchesTheTables) {
  EXPECT_NEAR(normal_upper_quantile(0.025), 1.959964, 1e-6);
  EXPECT_NEAR(normal_upper_quantile(0.005), 2.575829, 1e-6);
  EXPECT_NEAR(normal_upper_quantile(0.5), 0.0, 1e-12);
  EXPECT_THROW(normal_upper_quantile(0.0), std::invalid_argument);
}

// Two samples of five with no overlap, worked by hand: U = 25 (its maximum), mean 12.5,
// variance 25·11/12, so z = (12.5 − 0.5) / 4.787 = 2.507 and p = 0.0122. The 25 pairwise
// differences are 1…9 with multiplicities 1,2,3,4,5,4,3,2,1: their median is 5; for alpha 0.05,
// k = floor(12.5 − 1.96·4.787) = 3, so the interval is [3rd, 23rd] = [2, 8].
TEST(EstimateShift, WorkedExample) {
  const std::vector<double> baseline{1, 2, 3, 4, 5};
  const std::vector<double> candidate{10, 6, 9, 7, 8};
  const ShiftEstimate e = estimate_shift(baseline, candidate, 0.05);
  EXPECT_EQ(e.baseline_count, 5);
  EXPECT_EQ(e.candidate_count, 5);
  EXPECT_NEAR(e.p_value, 0.01219, 1e-4);
  EXPECT_DOUBLE_EQ(e.shift, 5.0);
  EXPECT_DOUBLE_EQ(e.shift_low, 2.0);
  EXPECT_DOUBLE_EQ(e.shift_high, 8.0);
}

TEST(EstimateShift, TiesEverywhereGiveNoEvidence) {
  const std::vector<double> same(10, 3.0);
  const ShiftEstimate e = estimate_shift(same, same, 0.01);
  EXPECT_DOUBLE_EQ(e.p_value, 1.0);
  EXPECT_DOUBLE_EQ(e.shift, 0.0);
}

TEST(EstimateShift, TooFewSamplesLeaveTheIntervalUnbounded) {
  const std::vector<double> a{1, 2};
  const std::vector<double> b{3, 4};
  const ShiftEstimate e = estimate_shift(a, b, 0.01);
  EXPECT_TRUE(std::isinf(e.shift_low));
  EXPECT_TRUE(std::isinf(e.shift_high));
}

// A known shift under noise is found inside the interval, and a null shift's interval holds 0.
TEST(EstimateShift, FindsAKnownShiftUnderNoise) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(100.0, 2.0);
  std::vector<double> base, shifted, null;
  for (int i = 0; i < 200; ++i) {
    base.push_back(noise(rng));
    shifted.push_back(noise(rng) + 5.0);
    null.push_back(noise(rng));
  }
  const ShiftEstimate e = estimate_shift(base, shifted, 0.01);
  EXPECT_LT(e.p_value, 1e-10);
  EXPECT_NEAR(e.shift, 5.0, 0.6);
  EXPECT_LT(e.shift_low, 5.0);
  EXPECT_GT(e.shift_high, 5.0);
  const ShiftEstimate n = estimate_shift(base, null, 0.01);
  EXPECT_LT(n.shift_low, 0.0);
  EXPECT_GT(n.shift_high, 0.0);
}

// Past the thinning size the estimate still finds the shift (every sample enters the U test).
TEST(EstimateShift, LargeSamplesAreThinnedForThePairwiseDifferences) {
  std::vector<double> a, b;
  for (int i = 0; i < 5000; ++i) {
    a.push_back(static_cast<double>(i % 100));
    b.push_back(static_cast<double>(i % 100) + 10.0);
  }
  const ShiftEstimate e = estimate_shift(a, b, 0.01);
  EXPECT_NEAR(e.shift, 10.0, 0.5);
  EXPECT_LT(e.p_value, 1e-10);
}

}  // namespace
}  // namespace lpbench::stats
