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

# Configures build/gpu on the GPU machine (after scripts/gpu-bundle here, with .gpu-bundle
# carried): SQLite's header from the bundle and the machine's library, and the commit sent (from
# the bundle) stamped into every run's provenance. Extra arguments go to cmake.
lpbench_gpu_configure() {
  local bundle="$LPBENCH_ROOT/.gpu-bundle" sqlite_lib
  export LPBENCH_GIT_COMMIT LPBENCH_GIT_DIRTY
  LPBENCH_GIT_COMMIT=$(cat "$bundle/git-commit" 2>/dev/null || echo unknown)
  LPBENCH_GIT_DIRTY=$(cat "$bundle/git-dirty" 2>/dev/null || echo 0)
  sqlite_lib=$(ls /usr/lib/x86_64-linux-gnu/libsqlite3.so* 2>/dev/null | head -n 1)
  (cd "$LPBENCH_ROOT" && cmake --preset gpu -DSQLite3_INCLUDE_DIR="$bundle/sqlite/usr/include" \
    -DSQLite3_LIBRARY="$sqlite_lib" "$@")
}
