# Shared by the scripts in this folder (sourced, not run). Locates libtorch without importing
# torch: a C++ build needs its headers, libraries and CMake package, not its Python side.

LPBENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LPBENCH_TORCH_VERSION=2.11.0

# Prints the torch version installed for the given python, or nothing.
lpbench_torch_version() {
  "$1" - <<'PY' 2>/dev/null
import importlib.util, os, re
spec = importlib.util.find_spec("torch")
if spec:
    text = open(os.path.join(spec.submodule_search_locations[0], "version.py")).read()
    print(re.search(r"__version__\s*=\s*'([^']+)'", text).group(1))
PY
}

# Prints the first python whose torch is the pinned version: $LPBENCH_PYTHON, the project's
# .venv, then python3 (the GPU machine's, which has torch already).
lpbench_python_with_torch() {
  local py
  for py in "${LPBENCH_PYTHON:-}" "$LPBENCH_ROOT/.venv/bin/python3" python3; do
    [ -n "$py" ] || continue
    command -v "$py" >/dev/null 2>&1 || continue
    case "$(lpbench_torch_version "$py")" in
      "$LPBENCH_TORCH_VERSION"*) echo "$py"; return 0 ;;
    esac
  done
  return 1
}

# The torch package's lib/ folder for a python.
lpbench_torch_lib_dir() {
  "$1" -c "import importlib.util, os; print(os.path.join(importlib.util.find_spec('torch').submodule_search_locations[0], 'lib'))"
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# The commit sent (from the bundle), exported for every build step of a GPU visit: the build
# re-stamps its provenance (cmake/WriteBuildInfo.cmake) and without these falls back to the
# machine's .git, which may be older (perf-log §38: rebuilds inside gpu-measure were stamped so).
lpbench_gpu_provenance() {
  local bundle="$LPBENCH_ROOT/.gpu-bundle"
  export LPBENCH_GIT_COMMIT LPBENCH_GIT_DIRTY
  LPBENCH_GIT_COMMIT=$(cat "$bundle/git-commit" 2>/dev/null || echo unknown)
  LPBENCH_GIT_DIRTY=$(cat "$bundle/git-dirty" 2>/dev/null || echo 0)
}

# Configures build/gpu on the GPU machine (after scripts/gpu-bundle here, with .gpu-bundle
# carried): SQLite's header from the bundle and the machine's library, and the commit sent (from
# the bundle) stamped into every run's provenance. Extra arguments go to cmake.
lpbench_gpu_configure() {
  local bundle="$LPBENCH_ROOT/.gpu-bundle" sqlite_lib
  lpbench_gpu_provenance
  sqlite_lib=$(ls /usr/lib/x86_64-linux-gnu/libsqlite3.so* 2>/dev/null | head -n 1)
  (cd "$LPBENCH_ROOT" && cmake --preset gpu -DSQLite3_INCLUDE_DIR="$bundle/sqlite/usr/include" \
    -DLPBENCH_GLOO_INCLUDE_DIR="$bundle/gloo/usr/include" \
    -DSQLite3_LIBRARY="$sqlite_lib" "$@")
}

# The phases of a GPU visit (gpu-check, gpu-measure). `lpbench_phases_begin LOGS` starts a
# record in LOGS; `lpbench_phase NAME LIMIT_S [--expect RC[,RC...]] COMMAND...` runs COMMAND under LIMIT_S
# seconds (less where LPBENCH_BUDGET_S, counted from the begin, has less left), its output in
# LOGS/NAME.log, and prints one line; an exit code not among the RCs (0 unless given) or a time-out
# marks the phase failed, and a phase the budget leaves no room for is skipped. The record is
# kept in files, so phases run in the background (`&`) count too. `lpbench_phases_end` prints
# what failed or was skipped, last, and returns non-zero if anything did: a visit that did not do
# what it was sent for never ends green.
lpbench_phases_begin() {
  export LPBENCH_LOGS=$1 LPBENCH_PHASES_START
  LPBENCH_PHASES_START=$(date +%s)
  mkdir -p "$LPBENCH_LOGS"
  : >"$LPBENCH_LOGS/phases.failed"
  : >"$LPBENCH_LOGS/phases.skipped"
}
lpbench_phase() {
  local name=$1 limit=$2
  shift 2
  local expect=0
  if [ "${1:-}" = --expect ]; then
    expect=$2
    shift 2
  fi
  if [ -n "${LPBENCH_BUDGET_S:-}" ]; then
    local remaining=$((LPBENCH_BUDGET_S - ($(date +%s) - LPBENCH_PHASES_START)))
    if [ "$remaining" -lt 20 ]; then
      echo "[$name] skipped: $remaining s of the visit's budget left"
      echo "$name" >>"$LPBENCH_LOGS/phases.skipped"
      return 0
    fi
    [ "$limit" -gt "$remaining" ] && limit=$remaining
  fi
  local t0 rc=0 verdict=ok
  t0=$(date +%s)
  if declare -F "$1" >/dev/null; then
    # A function of this file (lpbench_gpu_configure): timeout runs programs, so a child bash
    # sources this file and calls it.
    set -- bash -c 'source "$0"; "$@"' "$LPBENCH_ROOT/scripts/lib.sh" "$@"
  fi
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >"$LPBENCH_LOGS/$name.log" 2>&1 || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    verdict="FAILED (timed out after $limit s)"
  elif [[ ",$expect," != *",$rc,"* ]]; then
    verdict="FAILED (exit $rc, expected $expect)"
  fi
  [ "$verdict" = ok ] || echo "$name" >>"$LPBENCH_LOGS/phases.failed"
  echo "[$name] $verdict, exit $rc after $(($(date +%s) - t0)) s: $(tail -n 1 "$LPBENCH_LOGS/$name.log" | cut -c1-150)"
}
# Whether a phase of this record failed.
lpbench_phase_failed() {
  grep -qx "$1" "$LPBENCH_LOGS/phases.failed"
}
lpbench_phases_end() {
  local failed skipped
  failed=$(paste -sd' ' "$LPBENCH_LOGS/phases.failed")
  skipped=$(paste -sd' ' "$LPBENCH_LOGS/phases.skipped")
  [ -z "$skipped" ] || echo "phases skipped for the budget: $skipped"
  if [ -n "$failed" ]; then
    echo "phases failed: $failed"
    return 1
  fi
  [ -z "$skipped" ] || return 1
  echo "every phase passed"
}
