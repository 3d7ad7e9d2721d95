#!/usr/bin/env bash
# Configures and builds mkube with Ninja and ccache into build/ (or $MKUBE_BUILD_DIR): the
# targets given (build.sh [TARGET...]), else all of it, tests included.
# The configuration asked for (MKUBE_BUILD_TYPE, MKUBE_CMAKE_ARGS) is recorded in the build
# folder; a folder configured otherwise is configured again from a fresh cache, so that a
# reused folder never builds with options other than those asked for (a sanitizer lane
# without its sanitizers, or the reverse). Unchanged, CMake is not run here at all (Ninja
# re-runs it when a CMakeLists.txt changes); compile commands that came out the same are not
# rebuilt after a reconfiguration.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MKUBE_BUILD_DIR:-$root/build}
# ccache keys on paths relative to the source root, so a clone elsewhere still hits the cache.
export CCACHE_BASEDIR=$root
export CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# A development build: warnings in mkube's own code are errors.
args=(-G Ninja -DCMAKE_BUILD_TYPE="${MKUBE_BUILD_TYPE:-RelWithDebInfo}" -DMKUBE_WERROR=ON)
read -r -a extra <<<"${MKUBE_CMAKE_ARGS:-}"
args+=("${extra[@]}")
stamp=$build/mkube-configure.args
wanted=$(printf '%s\n' "${args[@]}")
if [ ! -f "$build/build.ninja" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  if [ -f "$build/CMakeCache.txt" ]; then
    echo "build.sh: $build was configured otherwise; configuring it again with:" \
      "${args[*]:2}" >&2
    # A fresh cache: an option dropped from MKUBE_CMAKE_ARGS must not live on in the old one.
    rm -f "$build/CMakeCache.txt" "$stamp"
  fi
  cmake -S "$root" -B "$build" "${args[@]}" >/dev/null
  printf '%s\n' "$wanted" >"$stamp"
fi
ninja -C "$build" ${MKUBE_NINJA_ARGS:-} "$@"
