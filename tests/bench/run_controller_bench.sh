#!/usr/bin/env bash
# Runs controller_bench through mkube-store + mkube-apiserver + mkube-scheduler +
# mkube-controller-manager with simulated nodes (mkube-agent --simulated), a fresh cluster per
# round; prints one line per round.
#   tests/bench/run_controller_bench.sh [--nodes 5000] [--replicas 10000] [--rounds 1]
#       [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
nodes=5000
replicas=10000
rounds=1
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$root/tests/bench/lib.sh"
{
  echo 'bench-token,bench,1,"system:masters"'
  echo 'sched-token,system:kube-scheduler,2,'
  echo 'cm-token,system:kube-controller-manager,3,'
} >"$tmp/tokens.csv"
echo bench-token >"$tmp/bench.token"
echo sched-token >"$tmp/sched.token"
echo cm-token >"$tmp/cm.token"
echo agent-token >"$tmp/agent.token"

stop_all() {
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  pids=()
}

run() {  # run ROUND
  local d=$tmp/round-$1
  mkdir -p "$d"
  "$build/bin/mkube-store" --data-dir "$d/store" --listen 127.0.0.1:0 \
    --address-file "$d/store.addr" --log-level warn >"$d/store.log" 2>&1 &
  pids+=($!)
  wait_file "$d/store.addr"
  "$build/bin/mkube-apiserver" --listen 127.0.0.1:0 --store-endpoints "$(cat "$d/store.addr")" \
    --token-file "$tmp/tokens.csv" --insecure-plaintext --agent-token-file "$tmp/agent.token" \
    --address-file "$d/api.addr" --log-level warn >"$d/api.log" 2>&1 &
  pids+=($!)
  wait_file "$d/api.addr"
  local api
  api=$(cat "$d/api.addr")
  "$build/bin/mkube-agent" --apiserver "$api" --insecure-plaintext --token-file "$tmp/bench.token" \
    --agent-token-file "$tmp/agent.token" --root-dir "$d/agent" --simulated "$nodes" \
    --simulated-zones 10 --ready-file "$d/agent.ready" --log-level warn >"$d/agent.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 1200); do [ -s "$d/agent.ready" ] && break; sleep 0.1; done
  [ -s "$d/agent.ready" ] || { echo "simulated nodes did not come up (see $d/agent.log)" >&2; exit 1; }
  "$build/bin/mkube-scheduler" --apiserver "$api" --insecure-plaintext --token-file "$tmp/sched.token" \
    --ready-file "$d/sched.ready" --log-level warn >"$d/sched.log" 2>&1 &
  pids+=($!)
  wait_file "$d/sched.ready"
  "$build/bin/mkube-controller-manager" --apiserver "$api" --insecure-plaintext \
    --token-file "$tmp/cm.token" --ready-file "$d/cm.ready" --log-level warn >"$d/cm.log" 2>&1 &
  local cm_pid=$!
  pids+=($cm_pid)
  wait_file "$d/cm.ready"
  local line
  if ! line=$("$build/bench/controller_bench" --apiserver "$api" --token bench-token \
      --replicas "$replicas" --cm-pid "$cm_pid"); then
    echo "round $1 did not finish: $line (logs in $d)" >&2
    tail -5 "$d"/*.log >&2
  fi
  printf 'nodes=%s %s load=%s\n' "$nodes" "$line" "$(cut -d' ' -f1-3 /proc/loadavg)"
  # CPU seconds and RSS of every daemon over the whole round (registration included).
  ps -o comm=,times=,rss= -p "$(IFS=,; echo "${pids[*]}")" |
    awk '{printf "  %-24s cpu_s=%-6s rss_mib=%d\n", $1, $2, $3/1024}'
  stop_all
}

for r in $(seq 1 "$rounds"); do run "$r"; done
