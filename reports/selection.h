#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/store/store.h"

namespace lpbench::reports {

// One side of a comparison, as the command line spells it:
//   sweep:ID[,ID…]   the runs of these sweeps
//   run:ID[,ID…]     these runs
//   commit:SHA       runs whose provenance git commit starts with SHA (4 to 40 hex digits)
//   nightly:N        per workload and recipe, the last N runs of sweeps labelled "nightly" on
//                    this host, leaving out the runs the other side selected
//   since:TIME       the runs of sweeps started on this host at or after TIME (ISO 8601 UTC,
//                    e.g. 2026-11-22T03:00:00Z), e.g. those of tonight's nightly suite
struct Selection {
  enum class Kind { sweeps, runs, commit, nightly, since };
  Kind kind = Kind::sweeps;
  std::vector<int64_t> ids;  // sweeps, runs
  std::string text;          // commit prefix, since time
  int64_t count = 0;         // nightly
  std::string spec;          // as written
};

inline constexpr std::string_view kNightlyLabel = "nightly";

// Throws InputError naming `flag` and the valid forms.
Selection parse_selection(std::string_view text, std::string_view flag);

// A start time as `since:` and `report --since` take it (ISO 8601 UTC, e.g.
// 2026-11-22T03:00:00Z), normalized to compare as text with the stored times. Throws InputError.
std::string parse_since(std::string_view time, std::string_view flag);

// The GPU model a run or kernel result was measured on ("the CPU" for CPU runs): runs of
// different GPU models are never one series.
std::string gpu_model(const store::RunRecord& run);
std::string gpu_model(const store::KernelResultRecord& result);

// The runs each side picks, in id order. Ids that do not exist are an InputError; a commit,
// nightly or since selection that matches nothing is simply empty (not enough data, not bad
// input). A nightly side is resolved last, without the other side's runs, so that
// `--baseline nightly:7 --candidate sweep:42` never compares sweep 42 with itself, and only
// from the GPU models the other side ran on: a night on a GPU model the history never saw
// starts a new series (a note says so) rather than being judged against another GPU.
//
// The kernel suite's results (`lpbench gemm --db`) are picked alike: those of the sweeps a
// sweep:, since: or nightly: side names (nightly: the last N of each case); run: and commit:
// pick none.
struct SelectedPair {
  std::vector<store::RunRecord> baseline;
  std::vector<store::RunRecord> candidate;
  std::vector<store::KernelResultRecord> kernel_baseline;
  std::vector<store::KernelResultRecord> kernel_candidate;
  std::vector<std::string> notes;  // what the selection left out, and why
};
SelectedPair select_runs(const store::Store& store, const Selection& baseline,
                         const Selection& candidate);

}  // namespace lpbench::reports
