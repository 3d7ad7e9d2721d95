#!/usr/bin/env bash
# Runs watch_fanout against mkube-apiserver twice: once on mkube-store, once on a real etcd,
# side by side, and prints both lines with the apiserver's RSS. A run with errors (a failed
# create, an event not delivered) is said (FAILED) and makes the exit status 1.
#   tests/bench/run_watch_fanout.sh [--watchers 1000] [--pods 10000] [--create-rate 300] [--connections 8]
#                                   [--warmup-pods N] [--timeline] [--build DIR] [-- apiserver flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
watchers=1000
pods=10000
rate=300
connections=8
timeline=()
warmup=0
api_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --watchers) watchers=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --create-rate) rate=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --timeline) timeline=(--timeline); shift ;;
    --warmup-pods) warmup=$2; shift 2 ;;
    --) shift; api_args=("$@"); break ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$root/tests/bench/lib.sh"
printf 'bench-token,bench,1,"system:masters"\n' >"$tmp/tokens.csv"

run() {  # run NAME STORE_ENDPOINT
  local name=$1 store=$2
  "$build/bin/mkube-apiserver" --listen 127.0.0.1:0 --store-endpoints "$store" \
    --token-file "$tmp/tokens.csv" --insecure-plaintext --address-file "$tmp/$name.api" \
    --log-level warn "${api_args[@]}" >"$tmp/$name.api.log" 2>&1 &
  local api_pid=$!
  pids+=($api_pid)
  wait_file "$tmp/$name.api"
  local line
  if ! line=$("$build/bench/watch_fanout" --apiserver "$(cat "$tmp/$name.api")" --token bench-token \
      --watchers "$watchers" --pods "$pods" --create-rate "$rate" --connections "$connections" \
      --warmup-pods "$warmup" "${timeline[@]}"); then
    run_failed "$name: $line (apiserver log: $tmp/$name.api.log)"
    tail -5 "$tmp/$name.api.log" >&2
  fi
  local rss
  rss=$(rss_mb "$api_pid")
  printf '%-12s %s apiserver_rss_mib=%s\n' "$name" "$line" "$rss"
  { kill -9 "$api_pid" && wait "$api_pid"; } 2>/dev/null || true
}

"$build/bin/mkube-store" --data-dir "$tmp/store" --listen 127.0.0.1:0 \
  --address-file "$tmp/store.addr" --log-level warn >"$tmp/store.log" 2>&1 &
pids+=($!)
wait_file "$tmp/store.addr"
run mkube-store "$(cat "$tmp/store.addr")"

start_etcd "$tmp/etcd"
run etcd "$etcd_ep"
bench_exit
