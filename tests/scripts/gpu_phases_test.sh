#!/usr/bin/env bash
# The GPU machine's scripts end non-zero, naming the failing phase last, when a build, a test or
# a measurement fails: run here against stubs of the build, the programs and the GPU tools.
#   tests/scripts/gpu_phases_test.sh REPOSITORY_ROOT
set -uo pipefail
root=${1:?the repository root}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check WHAT EXPECTED_RC ACTUAL_RC LAST_LINE EXPECTED_LAST_LINE
  if [ "$2" != "$3" ] || [ "$4" != "$5" ]; then
    echo "FAIL: $1: exit $3 (want $2), last line '$4' (want '$5')"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}

# A sandbox with the real scripts, a stub build and stub tools on PATH. STUB_FAIL names what the
# stubs fail: build, ctest, or a word that makes the stub lpbench exit 1 when it is an argument.
sandbox() {
  local dir=$work/$1
  mkdir -p "$dir/scripts" "$dir/bin"
  cp "$root"/scripts/lib.sh "$root"/scripts/gpu-check "$root"/scripts/gpu-measure "$dir/scripts/"
  cat >"$dir/scripts/gpu-build" <<'STUB'
#!/usr/bin/env bash
cd "$(dirname "$0")/.."
[ "${STUB_FAIL:-}" = build ] && { echo "error: the stub build failed"; exit 1; }
mkdir -p build/gpu/harness build/gpu/tests
for program in build/gpu/harness/lpbench build/gpu/harness/lpbench-kernels build/gpu/tests/gpu_kernels_test build/gpu/tests/wgmma_bench build/gpu/tests/fused_ops_bench; do
  cat >"$program" <<'PROGRAM'
#!/usr/bin/env bash
# STUB_TESTS_AFTER: a file the GPU tests fail without (what must be done before they start).
if [ -n "${STUB_TESTS_AFTER:-}" ] && [ "$(basename "$0")" = gpu_kernels_test ] &&
  [ ! -e "$STUB_TESTS_AFTER" ]; then
  echo "the tests started before $STUB_TESTS_AFTER"
  exit 1
fi
# --no-memory-plan: the out-of-memory phases, whose runs end oom (exit 1) by design.
for arg in "$@"; do
  [ "$arg" = --no-memory-plan ] && { echo "a run ended oom"; exit 1; }
  [ -n "${STUB_FAIL:-}" ] && [ "$arg" = "$STUB_FAIL" ] && { echo "stub failure on $arg"; exit 1; }
done
echo "stub $(basename "$0") $*"
PROGRAM
  chmod +x "$program"
done
echo "stub build done"
STUB
  chmod +x "$dir/scripts/gpu-build"
  for tool in nvidia-smi nvcc cmake g++ compute-sanitizer; do
    printf '#!/usr/bin/env bash\necho "stub %s"\n' "$tool" >"$dir/bin/$tool"
  done
  cat >"$dir/bin/ctest" <<'STUB'
#!/usr/bin/env bash
if [ "${STUB_FAIL:-}" = ctest ]; then echo "90% tests passed, 1 tests failed out of 10"; exit 8; fi
echo "100% tests passed, 0 tests failed out of 10"
STUB
  chmod +x "$dir"/bin/*
  echo "$dir"
}

run() {  # run SANDBOX STUB_FAIL SCRIPT ARGS...: prints the exit code, then the last line
  local dir=$1 fail=$2
  shift 2
  local log=$work/$(basename "$dir").log rc=0
  (cd "$dir" && PATH="$dir/bin:$PATH" STUB_FAIL=$fail OUT="$dir/out" "$@") >"$log" 2>&1 || rc=$?
  echo "$rc"
  tail -n 1 "$log"
}

# The phase helpers alone.
out=$( (source "$root/scripts/lib.sh"
  lpbench_phases_begin "$work/alone"
  lpbench_phase passes 10 true
  lpbench_phase fails 10 false
  lpbench_phase expected-exit 10 --expect 1 false
  lpbench_phase times-out 1 sleep 5
  (lpbench_phase in-background 10 false) &
  wait
  lpbench_phases_end) 2>&1)
rc=$?
check "lib.sh phases" 1 "$rc" "$(tail -n 1 <<<"$out")" "phases failed: fails times-out in-background"

dir=$(sandbox check-ok)
mapfile -t r < <(run "$dir" "" scripts/gpu-check)
check "gpu-check, all passing" 0 "${r[0]}" "${r[1]}" "every phase passed"

dir=$(sandbox check-build)
mapfile -t r < <(run "$dir" build scripts/gpu-check)
check "gpu-check, the build fails" 1 "${r[0]}" "${r[1]}" "phases failed: build"

dir=$(sandbox check-ctest)
mapfile -t r < <(run "$dir" ctest scripts/gpu-check)
check "gpu-check, a GPU test fails" 1 "${r[0]}" "${r[1]}" "phases failed: ctest"

dir=$(sandbox measure-ok)
mapfile -t r < <(run "$dir" "" scripts/gpu-measure core)
check "gpu-measure core, all passing" 0 "${r[0]}" "${r[1]}" "every phase passed"

dir=$(sandbox measure-phase)
mapfile -t r < <(run "$dir" model:small scripts/gpu-measure core)
check "gpu-measure core, one phase fails" 1 "${r[0]}" "${r[1]}" "phases failed: small-corpus"

dir=$(sandbox measure-build)
mapfile -t r < <(run "$dir" build scripts/gpu-measure core)
check "gpu-measure, the build fails" 1 "${r[0]}" "${r[1]}" "phases failed: build"

# An A-B plan (a bundle with a base tree, LPBENCH_BASE_TARGETS): the base tree builds beside
# this one, and the GPU tests wait for it (test_phase) rather than compete with its compile.
dir=$(sandbox measure-ab)
base_src=$work/base-src
mkdir -p "$base_src/scripts" "$dir/.gpu-bundle"
cp "$dir/scripts/gpu-build" "$base_src/scripts/stub-build"
cat >"$base_src/scripts/gpu-build" <<'STUB'
#!/usr/bin/env bash
sleep 2
"$(dirname "$0")/stub-build" && touch "$(dirname "$0")/../base-built"
STUB
chmod +x "$base_src/scripts/gpu-build"
tar czf "$dir/.gpu-bundle/base.tar.gz" -C "$base_src" .
echo base >"$dir/.gpu-bundle/base-commit"
mapfile -t r < <(LPBENCH_BASE_DIR=$work/base LPBENCH_BASE_TARGETS=fused_ops_bench \
  STUB_TESTS_AFTER=$work/base/base-built run "$dir" "" scripts/gpu-measure ops-ab)
check "gpu-measure ops-ab, the tests after the base build" 0 "${r[0]}" "${r[1]}" \
  "every phase passed"

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
