#!/usr/bin/env bash
# A short round of every benchmark script at tiny sizes (ctest's bench-smoke label): not a
# measurement, a check that each still runs end to end against today's daemons and reports
# errors as errors. Each script exits non-zero on a failed run or an error count, and so does
# this one. Without etcd (deploy/deps.sh installs it) the two store comparisons cannot run:
# the others still do, and the test then reports Skipped (exit 77), not Passed.
#   tests/bench/smoke.sh [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${MKUBE_BUILD_DIR:-$root/build}
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
bench=$root/tests/bench
failed=()
smoke() {  # smoke NAME COMMAND...
  local name=$1 began=$SECONDS; shift
  echo "==== $name: $*"
  if "$@"; then
    echo "==== $name: passed in $((SECONDS - began)) s"
  else
    echo "==== $name: FAILED (exit $?) in $((SECONDS - began)) s"
    failed+=("$name")
  fi
}

have_etcd=1
command -v etcd >/dev/null || have_etcd=0
if [ "$have_etcd" = 1 ]; then
  smoke store "$bench/run_store_bench.sh" --build "$build" --seconds 0.5 --rounds 1 \
    --clients "1 16" --watchers 20 --streams 2 --watch-puts 50
  smoke watch-fanout "$bench/run_watch_fanout.sh" --build "$build" --watchers 10 --pods 50 \
    --create-rate 0 --connections 2
fi
engine_dir=$(mktemp -d)
trap 'rm -rf "$engine_dir"' EXIT
smoke engine env TMPDIR="$engine_dir" "$build/bench/engine_bench" 16 2000
# At least 100 nodes: anti-affinity keeps a group (100 pods) one per node.
smoke scheduler "$bench/run_scheduler_bench.sh" --build "$build" --nodes 100 --pods 200 \
  --timeout 60
smoke controller "$bench/run_controller_bench.sh" --build "$build" --nodes 20 --replicas 40 \
  --timeout 60
smoke pod-start "$bench/run_pod_start_bench.sh" --build "$build" --pods 2 --execs 3 --rounds 1

if [ "${#failed[@]}" -gt 0 ]; then
  echo "bench smoke: FAILED: ${failed[*]}"
  exit 1
fi
if [ "$have_etcd" = 0 ]; then
  echo "bench smoke: skipped the store and watch-fanout rounds: etcd is not installed" \
    "(deploy/deps.sh installs etcd-server); the others passed"
  exit 77
fi
echo "bench smoke: every script passed"
