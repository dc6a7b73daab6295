#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/stats/stats.h"

namespace lpbench::stats {
namespace {

TEST(Summarize, KnownSeries) {
  // 1..11: median 6; p10 at rank 1 → 2; p90 at rank 9 → 10.
  const std::vector<double> values{11, 3, 5, 1, 9, 7, 2, 4, 6, 8, 10};
  const Summary s = summarize(values);
  EXPECT_EQ(s.count, 11);
  EXPECT_DOUBLE_EQ(s.median, 6.0);
  EXPECT_DOUBLE_EQ(s.p10, 2.0);
  EXPECT_DOUBLE_EQ(s.p90, 10.0);
  EXPECT_DOUBLE_EQ(s.mean, 6.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 11.0);
}

TEST(Summarize, InterpolatesBetweenRanksLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], [10, 50, 90]) == [1.3, 2.5, 3.7]
  const std::vector<double> values{4, 1, 3, 2};
  const Summary s = summarize(values);
  EXPECT_NEAR(s.p10, 1.3, 1e-12);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_NEAR(s.p90, 3.7, 1e-12);
}

TEST(Summarize, SingleAndEmptySeries) {
  const std::vector<double> one{42.0};
  const Summary s = summarize(one);
  EXPECT_EQ(s.count, 1);
  EXPECT_DOUBLE_EQ(s.p10, 42.0);
  EXPECT_DOUBLE_EQ(s.p90, 42.0);
  const Summary empty = summarize(std::vector<double>{});
  EXPECT_EQ(empty.count, 0);
  EXPECT_TRUE(std::isnan(empty.median));
}

TEST(Percentile, RejectsQuantilesOutsideTheUnitInterval) {
  const std::vector<double> values{1, 2};
  EXPECT_THROW(percentile_sorted(values, 1.5), std::invalid_argument);
}

}  // namespace
}  // namespace lpbench::stats
