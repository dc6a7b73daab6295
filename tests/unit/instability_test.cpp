// The instability watch on synthetic series: spikes and growth against the recent median, one
// event per excursion, non-finite values once, nothing during the first window.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/runner/instability.h"

namespace lpbench::runner {
namespace {

std::vector<Instability> feed(InstabilityWatch& watch, int64_t from, int64_t to, double loss,
                              double grad_norm) {
  std::vector<Instability> all;
  for (int64_t step = from; step < to; ++step) {
    for (auto& e : watch.observe(step, loss, grad_norm))
      all.push_back(e);
  }
  return all;
}

TEST(InstabilityWatch, ASteadyRunRaisesNothing) {
  InstabilityWatch watch;
  EXPECT_TRUE(feed(watch, 0, 500, 2.0, 1.0).empty());
}

TEST(InstabilityWatch, NothingIsJudgedBeforeAWindowOfSteps) {
  InstabilityWatch watch;
  feed(watch, 0, 10, 2.0, 1.0);
  EXPECT_TRUE(watch.observe(10, 9.0, 100.0).empty());
}

TEST(InstabilityWatch, ALossSpikeIsOneEventPerExcursion) {
  InstabilityWatch watch;
  feed(watch, 0, 60, 2.0, 1.0);
  const auto first = watch.observe(60, 3.5, 1.0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].kind, "loss_spike");
  EXPECT_EQ(first[0].step, 60);
  EXPECT_NE(first[0].detail.find("1.75x"), std::string::npos) << first[0].detail;
  EXPECT_TRUE(watch.observe(61, 3.5, 1.0).empty());  // the same excursion
  feed(watch, 62, 200, 2.0, 1.0);
  EXPECT_EQ(watch.observe(200, 3.5, 1.0).size(), 1u);  // a new one, past the quiet window
  EXPECT_TRUE(watch.observe(201, 2.9, 1.0).empty());   // 1.45x: under the threshold
}

TEST(InstabilityWatch, AGrowingGradientNormIsReported) {
  InstabilityWatch watch;
  feed(watch, 0, 60, 2.0, 0.5);
  EXPECT_TRUE(watch.observe(60, 2.0, 4.9).empty());  // 9.8x
  const auto events = watch.observe(61, 2.0, 6.0);   // 12x
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "grad_norm_growth");
}

TEST(InstabilityWatch, NonFiniteValuesAreReportedOnce) {
  InstabilityWatch watch;
  const auto first = watch.observe(3, NAN, 1.0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].kind, "non_finite");
  EXPECT_NE(first[0].detail.find("the loss"), std::string::npos);
  EXPECT_TRUE(watch.observe(4, 2.0, INFINITY).empty());
}

}  // namespace
}  // namespace lpbench::runner
