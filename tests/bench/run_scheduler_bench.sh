#!/usr/bin/env bash
# Runs scheduler_bench through mkube-store + mkube-apiserver + mkube-scheduler with simulated
# nodes (mkube-agent --simulated, ten zones), a fresh cluster per workload, then the framework
# alone in process (scheduler_framework_bench); prints one line per run.
#   tests/bench/run_scheduler_bench.sh [--nodes "1000 5000"] [--pods 10000]
#       [--workloads "plain node-affinity anti-affinity pod-affinity spread"] [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
node_counts="1000 5000"
pods=10000
workloads="plain node-affinity anti-affinity pod-affinity spread"
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) node_counts=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$root/tests/bench/lib.sh"
printf 'bench-token,bench,1,"system:masters"\nsched-token,system:kube-scheduler,2,\n' >"$tmp/tokens.csv"
echo bench-token >"$tmp/bench.token"
echo sched-token >"$tmp/sched.token"
echo agent-token >"$tmp/agent.token"

stop_all() {
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  pids=()
}

run() {  # run NODES WORKLOAD
  local nodes=$1 workload=$2 d=$tmp/$1-$2
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
  local began=$SECONDS
  "$build/bin/mkube-agent" --apiserver "$api" --insecure-plaintext --token-file "$tmp/bench.token" \
    --agent-token-file "$tmp/agent.token" --root-dir "$d/agent" --simulated "$nodes" \
    --simulated-zones 10 --ready-file "$d/agent.ready" --log-level warn >"$d/agent.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 1200); do [ -s "$d/agent.ready" ] && break; sleep 0.1; done
  [ -s "$d/agent.ready" ] || { echo "simulated nodes did not come up (see $d/agent.log)" >&2; exit 1; }
  local registered=$((SECONDS - began))
  "$build/bin/mkube-scheduler" --apiserver "$api" --insecure-plaintext --token-file "$tmp/sched.token" \
    --ready-file "$d/sched.ready" --log-level warn >"$d/sched.log" 2>&1 &
  local sched_pid=$!
  pids+=($sched_pid)
  wait_file "$d/sched.ready"
  local line
  line=$("$build/bench/scheduler_bench" --apiserver "$api" --token bench-token \
    --workload "$workload" --pods "$pods" --scheduler-pid "$sched_pid")
  printf 'e2e       nodes=%-5s %s (nodes registered in %ss)\n' "$nodes" "$line" "$registered"
  stop_all
}

for nodes in $node_counts; do
  for w in $workloads; do run "$nodes" "$w"; done
done
for nodes in $node_counts; do
  for w in $workloads; do
    printf 'framework %s\n' "$("$build/bench/scheduler_framework_bench" --nodes "$nodes" --pods "$pods" --workload "$w")"
  done
done
