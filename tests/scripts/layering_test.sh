#!/usr/bin/env bash
# The include graph points one way, as the README draws it:
#   harness/cli, harness/reproduce → reports → base;  harness → workloads → kernels;  harness → base
# base/ stands on nothing of lpbench and not on torch; reports/ reads the store through base/
# only; kernels/cuda never sees torch; only base/store speaks SQL.
#   tests/scripts/layering_test.sh REPOSITORY_ROOT
set -uo pipefail
root=${1:?the repository root}
cd "$root" || exit 2
failures=0
# forbid WHAT DIRS PATTERN: no file under DIRS has an #include matching PATTERN.
forbid() {
  local what=$1 dirs=$2 pattern=$3 found
  # shellcheck disable=SC2086 # DIRS are words
  found=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($pattern)" $dirs \
    --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' 2>/dev/null)
  if [ -n "$found" ]; then
    echo "FAIL: $what:"
    echo "$found" | sed 's/^/  /'
    failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}
torch='torch/|ATen/|c10/'
forbid "base/ includes nothing else of lpbench, and no torch" base "harness/|reports/|workloads/|kernels/|$torch"
forbid "reports/ stands on base/ only, without torch" reports "harness/|workloads/|kernels/|$torch"
forbid "workloads/ includes neither harness/ nor reports/" workloads "harness/|reports/|base/"
forbid "kernels/ includes nothing above it" kernels "harness/|reports/|workloads/|base/"
forbid "kernels/cuda/ takes raw pointers, never torch" kernels/cuda "$torch"
harness_below_cli=$(ls -d harness/*/ | grep -vE '^harness/(cli|reproduce)/$' | tr '\n' ' ')
forbid "harness/ below cli and reproduce does not reach into reports/" "$harness_below_cli harness/main.cpp" "reports/"
non_store=$(ls -d base/*/ harness reports workloads kernels | grep -v '^base/store/$' | tr '\n' ' ')
forbid "only base/store speaks SQL" "$non_store" "sqlite3.h|base/store/sqlite.h"
[ "$failures" -eq 0 ] || { echo "$failures layering rule(s) broken"; exit 1; }
echo "the include graph points one way"
