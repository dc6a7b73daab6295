#pragma once

#include <string>

namespace lpbench::env {

// Now, as ISO 8601 in UTC with milliseconds: "2026-11-22T03:04:05.678Z". Sorts as text.
std::string utc_now_iso8601();

}  // namespace lpbench::env
