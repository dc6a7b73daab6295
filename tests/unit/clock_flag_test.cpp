// When a run's timings are flagged for the GPU's clock: a fall of more than 5 % between the first
// measured step and the end, or heat or a hardware brake; a power cap alone is the GPU's ordinary
// state under load.
#include <gtest/gtest.h>

#include "harness/env/nvml.h"

namespace lpbench::env {
namespace {

constexpr uint64_t kSwPowerCap = 0x4;
constexpr uint64_t kHwThermal = 0x40;

TEST(ClockFlag, ASteadyClockUnderAPowerCapIsNotFlagged) {
  EXPECT_FALSE(clock_fell(1455.0, 1455.0, kSwPowerCap));
  EXPECT_FALSE(clock_fell(1980.0, 1950.0, std::nullopt));
}

TEST(ClockFlag, AFallOfMoreThanFivePercentIsFlagged) {
  EXPECT_TRUE(clock_fell(1695.0, 1455.0, kSwPowerCap));
  EXPECT_TRUE(clock_fell(1980.0, 1800.0, std::nullopt));
  EXPECT_FALSE(clock_fell(1980.0, 1890.0, std::nullopt));  // 4.5 %
}

TEST(ClockFlag, HeatOrAHardwareBrakeIsFlaggedAtAnyClock) {
  EXPECT_TRUE(clock_fell(1980.0, 1980.0, kHwThermal));
  EXPECT_TRUE(clock_fell(1980.0, 1980.0, kSwPowerCap | 0x80));
}

}  // namespace
}  // namespace lpbench::env
