#!/usr/bin/env bash
# Runs watch_fanout against mkube-apiserver twice: once on mkube-store, once on a real etcd,
# side by side, and prints both lines with the apiserver's RSS.
#   tests/bench/run_watch_fanout.sh [--watchers 1000] [--pods 10000] [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
watchers=1000
pods=10000
while [ $# -gt 0 ]; do
  case "$1" in
    --watchers) watchers=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_file() { for _ in $(seq 1 300); do [ -s "$1" ] && return; sleep 0.1; done; echo "timed out waiting for $1" >&2; exit 1; }
printf 'bench-token,bench,1,"system:masters"\n' >"$tmp/tokens.csv"

run() {  # run NAME STORE_ENDPOINT
  local name=$1 store=$2
  "$build/bin/mkube-apiserver" --listen 127.0.0.1:0 --store-endpoints "$store" \
    --token-file "$tmp/tokens.csv" --insecure-plaintext --address-file "$tmp/$name.api" \
    --log-level warn >"$tmp/$name.api.log" 2>&1 &
  local api_pid=$!
  pids+=($api_pid)
  wait_file "$tmp/$name.api"
  local line
  line=$("$build/bench/watch_fanout" --apiserver "$(cat "$tmp/$name.api")" --token bench-token \
    --watchers "$watchers" --pods "$pods")
  local rss
  rss=$(awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$api_pid/status")
  printf '%-12s %s apiserver_rss_mib=%s\n' "$name" "$line" "$rss"
  kill -9 "$api_pid" 2>/dev/null || true
}

"$build/bin/mkube-store" --data-dir "$tmp/store" --listen 127.0.0.1:0 \
  --address-file "$tmp/store.addr" --log-level warn >"$tmp/store.log" 2>&1 &
pids+=($!)
wait_file "$tmp/store.addr"
run mkube-store "$(cat "$tmp/store.addr")"

cp=$(free_port); pp=$(free_port)
etcd --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$cp" \
  --advertise-client-urls "http://127.0.0.1:$cp" --listen-peer-urls "http://127.0.0.1:$pp" \
  --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "default=http://127.0.0.1:$pp" \
  --log-level warn --logger zap >"$tmp/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$cp" endpoint health >/dev/null 2>&1 && break
  sleep 0.1
done
run etcd "127.0.0.1:$cp"
