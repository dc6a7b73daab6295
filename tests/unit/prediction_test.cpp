#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/stats/prediction.h"

namespace lpbench::stats {
namespace {

// Printed tables of Student's t (two-sided 99 % and 95 %) and the normal limit.
TEST(StudentT, QuantilesMatchThePrintedTables) {
  EXPECT_NEAR(student_t_quantile(0.995, 1), 63.657, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.995, 2), 9.925, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.604, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.995, 1e6), 2.576, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.005, 2), -9.925, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.5, 3), 0.0, 1e-9);
  EXPECT_THROW(student_t_quantile(1.0, 3), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.9, 0), std::invalid_argument);
}

TEST(PredictionInterval, MeanPlusMinusTTimesTheSpreadOfOneMoreValue) {
  // Mean 2, sd 1, n 3: half width t(0.995, 2) · √(4/3) = 11.46.
  const std::vector<double> nights{1.0, 2.0, 3.0};
  const auto pi = prediction_interval(nights, 0.01);
  ASSERT_TRUE(pi.has_value());
  EXPECT_NEAR(pi->low, 2.0 - 9.925 * std::sqrt(4.0 / 3.0), 1e-2);
  EXPECT_NEAR(pi->high, 2.0 + 9.925 * std::sqrt(4.0 / 3.0), 1e-2);
  // More nights with the same spread: narrower.
  const std::vector<double> more{1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0};
  const auto narrower = prediction_interval(more, 0.01);
  ASSERT_TRUE(narrower.has_value());
  EXPECT_LT(narrower->high - narrower->low, (pi->high - pi->low) / 3.0);
}

TEST(PredictionInterval, IdenticalValuesGiveAPointAndTooFewGiveNothing) {
  const std::vector<double> same{4.0, 4.0, 4.0};
  const auto pi = prediction_interval(same, 0.01);
  ASSERT_TRUE(pi.has_value());
  EXPECT_DOUBLE_EQ(pi->low, 4.0);
  EXPECT_DOUBLE_EQ(pi->high, 4.0);
  const std::vector<double> one{4.0, NAN};
  EXPECT_FALSE(prediction_interval(one, 0.01).has_value());
}

}  // namespace
}  // namespace lpbench::stats
