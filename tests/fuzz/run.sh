#!/usr/bin/env bash
# Runs the fuzz target of the store's transport for a bounded time, starting from the corpus
# in the repo (new inputs go to a temp folder; the corpus is not changed). Fails, printing the
# input, if a target crashes, leaks, trips a sanitizer or hangs.
#   tests/fuzz/run.sh [--seconds S] [--build DIR]     (DIR configured with -DMKUBE_FUZZ=ON)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-asan
seconds=60
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for name in rpc; do
  target=$build/tests/fuzz/store_${name}_fuzz
  [ -x "$target" ] || { echo "run.sh: $target is missing (configure with -DMKUBE_FUZZ=ON)" >&2; exit 1; }
  mkdir -p "$tmp/$name"
  echo "== store_${name}_fuzz for ${seconds} s"
  if ! "$target" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$tmp/" "$tmp/$name" "$root/tests/fuzz/corpus/$name" >"$tmp/$name.log" 2>&1; then
    status=1
    tail -n 60 "$tmp/$name.log"
    for f in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* "$tmp"/oom-*; do
      [ -e "$f" ] || continue
      echo "-- input $(basename "$f") (base64):"
      base64 -w 100 "$f"
    done
  else
    grep -E "^stat::(number_of_executed_units|new_units_added|peak_rss_mb)" "$tmp/$name.log" || true
  fi
done
exit $status
