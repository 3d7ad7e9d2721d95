#!/usr/bin/env bash
# Configures (once) and builds mkube with Ninja and ccache into build/ (or $MKUBE_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MKUBE_BUILD_DIR:-$root/build}
# ccache keys on paths relative to the source root, so a clone elsewhere still hits the cache.
export CCACHE_BASEDIR=$root
export CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
if [ ! -f "$build/build.ninja" ]; then
  # A development build: warnings in mkube's own code are errors.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${MKUBE_BUILD_TYPE:-RelWithDebInfo}" \
    -DMKUBE_WERROR=ON ${MKUBE_CMAKE_ARGS:-} >/dev/null
fi
ninja -C "$build" ${MKUBE_NINJA_ARGS:-}
