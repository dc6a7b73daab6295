#include "base/env/time_stamp.h"

#include <fmt/chrono.h>

#include <chrono>

namespace lpbench::env {

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const auto seconds = std::chrono::floor<std::chrono::seconds>(now);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now - seconds).count();
  const std::time_t t = std::chrono::system_clock::to_time_t(seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", utc, millis);
}

}  // namespace lpbench::env
