#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/deps.sh"
"$root/deploy/build.sh"
build=${MKUBE_BUILD_DIR:-$root/build}
cd "$build"
ctest --output-on-failure --timeout 600 -j "${MKUBE_TEST_JOBS:-2}" "$@"
