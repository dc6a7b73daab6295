#pragma once

#include <string>

#include "reports/compare.h"

namespace lpbench::reports {

// The comparison as Markdown to paste into a pull request: the overall verdict, one row per
// workload, recipe and metric with both figures, the change with its interval or tolerance, and
// the rules the verdicts follow.
std::string render_compare_markdown(const Comparison& comparison);

// The comparison as JUnit XML for CI systems: one test case per workload, recipe and metric;
// a regression is a failure, UNSURE is skipped.
std::string render_compare_junit(const Comparison& comparison);

}  // namespace lpbench::reports
