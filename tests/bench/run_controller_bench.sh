#!/usr/bin/env bash
# Runs controller_bench through mkube-store + mkube-apiserver + mkube-scheduler +
# mkube-controller-manager with simulated nodes (mkube-agent --simulated), a fresh cluster per
# round; prints one line per round.
#   tests/bench/run_controller_bench.sh [--nodes 5000] [--replicas 10000] [--rounds 1]
#       [--idle SECONDS] [--timeout SECONDS] [--build DIR]
# Each daemon's CPU seconds in the scale and the rollout go to stderr; with --idle, also its CPU
# per second while the cluster sits idle that long before the scale. A round that does not
# finish is said (FAILED, with the logs' last lines) and makes the exit status 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
nodes=5000
replicas=10000
rounds=1
idle=0
timeout=600  # per phase (scale, rollout)
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --idle) idle=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
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

run() {  # run ROUND
  local d=$tmp/round-$1
  mkdir -p "$d"
  start_sim_cluster "$d" "$nodes"
  "$build/bin/mkube-controller-manager" --apiserver "$api" --insecure-plaintext \
    --token-file "$tmp/cm.token" --ready-file "$d/cm.ready" --log-level warn >"$d/cm.log" 2>&1 &
  local cm_pid=$!
  pids+=($cm_pid)
  wait_file "$d/cm.ready"
  local line watched=() p
  for p in "${pids[@]}"; do watched+=(--daemon "$(ps -o comm= -p "$p")=$p"); done
  if ! line=$("$build/bench/controller_bench" --apiserver "$api" --token bench-token \
      --replicas "$replicas" --cm-pid "$cm_pid" --idle "$idle" --timeout "$timeout" \
      "${watched[@]}"); then
    run_failed "round $1 did not finish: $line (logs in $d)"
    tail -5 "$d"/*.log >&2
  fi
  printf 'nodes=%s %s load=%s\n' "$nodes" "$line" "$(cut -d' ' -f1-3 /proc/loadavg)"
  # CPU seconds and RSS of every daemon over the whole round (registration included).
  ps -o comm=,times=,rss= -p "$(IFS=,; echo "${pids[*]}")" |
    awk '{printf "  %-24s cpu_s=%-6s rss_mib=%d\n", $1, $2, $3/1024}'
  stop_all
}

for r in $(seq 1 "$rounds"); do run "$r"; done
bench_exit
