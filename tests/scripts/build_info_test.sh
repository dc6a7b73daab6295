#!/usr/bin/env bash
# Build provenance as a GPU visit stamps it: the commit sent (from .gpu-bundle, exported by
# scripts/lib.sh for every build step), and a diagnostic build's knobs in the build type.
#   tests/scripts/build_info_test.sh SOURCE_DIR
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# lpbench_gpu_provenance exports the bundle's commit and dirty flag.
mkdir -p "$tmp/root/.gpu-bundle"
echo 0123456789abcdef0123456789abcdef01234567 >"$tmp/root/.gpu-bundle/git-commit"
echo 1 >"$tmp/root/.gpu-bundle/git-dirty"
got=$(LPBENCH_ROOT="$tmp/root" bash -c "source '$src/scripts/lib.sh'; LPBENCH_ROOT='$tmp/root'; \
  lpbench_gpu_provenance; bash -c 'echo \$LPBENCH_GIT_COMMIT \$LPBENCH_GIT_DIRTY'")
[ "$got" = "0123456789abcdef0123456789abcdef01234567 1" ] || fail "provenance exported '$got'"

# The build type: plain, and with the knobs of a diagnostic build.
cat >"$tmp/type.cmake" <<CMAKE
list(APPEND CMAKE_MODULE_PATH "$src/cmake")
include(LpbenchBuildType)
lpbench_build_type(plain "Release" "")
lpbench_build_type(diag "Release" "LPBENCH_WGMMA_PAIR_STORES=1;LPBENCH_WGMMA_NO_STORE=1")
message("[\${plain}] [\${diag}]")
CMAKE
got=$(cmake -P "$tmp/type.cmake" 2>&1)
want="[Release] [Release + wgmma diagnostics LPBENCH_WGMMA_PAIR_STORES=1 LPBENCH_WGMMA_NO_STORE=1]"
[ "$got" = "$want" ] || fail "build types '$got', want '$want'"

# The generator takes the exported commit over the tree's .git, and the build type as given.
LPBENCH_GIT_COMMIT=0123456789abcdef0123456789abcdef01234567 LPBENCH_GIT_DIRTY=1 \
  cmake -DSOURCE_DIR="$src" -DOUTPUT="$tmp/build_info.cpp" -DVERSION=9.9 \
  "-DBUILD_TYPE=Release + wgmma diagnostics X=1" "-DCOMPILER=GNU 12" \
  -P "$src/cmake/WriteBuildInfo.cmake"
grep -q '"9.9", "0123456789abcdef0123456789abcdef01234567", true, "Release + wgmma diagnostics X=1"' \
  "$tmp/build_info.cpp" || fail "build_info.cpp: $(cat "$tmp/build_info.cpp")"
echo "build info: ok"
