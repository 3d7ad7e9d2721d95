#!/usr/bin/env bash
# Runs scheduler_bench through mkube-store + mkube-apiserver + mkube-scheduler with simulated
# nodes (mkube-agent --simulated, ten zones), a fresh cluster per workload, then the framework
# alone in process (scheduler_framework_bench); prints one line per run. A run with errors
# (a create refused, a pod never bound, a pod that fits nowhere) is said (FAILED) and makes the
# exit status 1.
#   tests/bench/run_scheduler_bench.sh [--nodes "1000 5000"] [--pods 10000]
#       [--workloads "plain node-affinity anti-affinity pod-affinity spread"] [--timeout 600]
#       [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
node_counts="1000 5000"
pods=10000
timeout=600  # for the pods of one run to be bound
workloads="plain node-affinity anti-affinity pod-affinity spread"
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) node_counts=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$root/tests/bench/lib.sh"
printf 'bench-token,bench,1,"system:masters"\nsched-token,system:kube-scheduler,2,\n' >"$tmp/tokens.csv"
echo bench-token >"$tmp/bench.token"
echo sched-token >"$tmp/sched.token"
echo agent-token >"$tmp/agent.token"

run() {  # run NODES WORKLOAD
  local nodes=$1 workload=$2 d=$tmp/$1-$2
  mkdir -p "$d"
  start_sim_cluster "$d" "$nodes"
  local line
  if ! line=$("$build/bench/scheduler_bench" --apiserver "$api" --token bench-token \
      --workload "$workload" --pods "$pods" --scheduler-pid "$sched_pid" --timeout "$timeout"); then
    run_failed "e2e nodes=$nodes $workload: $line (logs in $d)"
    tail -5 "$d"/*.log >&2
  fi
  printf 'e2e       nodes=%-5s %s (nodes registered in %ss)\n' "$nodes" "$line" "$registered"
  stop_all
}

for nodes in $node_counts; do
  for w in $workloads; do run "$nodes" "$w"; done
done
for nodes in $node_counts; do
  for w in $workloads; do
    if ! line=$("$build/bench/scheduler_framework_bench" --nodes "$nodes" --pods "$pods" \
        --workload "$w"); then
      run_failed "framework nodes=$nodes $w: $line"
    fi
    printf 'framework %s\n' "$line"
  done
done
bench_exit
