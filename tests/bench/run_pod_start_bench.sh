#!/usr/bin/env bash
# Pod start on a real node, with containers isolated (--isolation auto) and not (none), rounds
# alternating, a fresh store, apiserver and agent each time; prints one line per round. A
# round that fails is said (FAILED, with the logs' last lines) and makes the exit status 1.
#   tests/bench/run_pod_start_bench.sh [--pods 40] [--rounds 2] [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
count=40
rounds=2
while [ $# -gt 0 ]; do
  case "$1" in
    --pods) count=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$root/tests/bench/lib.sh"
{
  echo 'bench-token,bench,1,"system:masters"'
  echo 'node-token,system:node:bench-node,2,"system:nodes"'
} >"$tmp/tokens.csv"
echo node-token >"$tmp/node.token"
echo agent-token >"$tmp/agent.token"
"$root/deploy/lib/images.sh" "$tmp/registry" "$build/bin" >/dev/null

run() {  # run ROUND ISOLATION
  local d=$tmp/round-$1-$2
  mkdir -p "$d"
  start_control_plane "$d"
  "$build/bin/mkube-agent" --apiserver "$api" --insecure-plaintext \
    --token-file "$tmp/node.token" --agent-token-file "$tmp/agent.token" --node-name bench-node \
    --node-ip 127.0.0.1 --listen 127.0.0.1:0 --pod-cidr 127.251.0.0/24 --root-dir "$d/agent" \
    --image-registry "$tmp/registry" --isolation "$2" --ready-file "$d/agent.ready" \
    --log-level warn >"$d/agent.log" 2>&1 &
  pids+=($!)
  wait_file "$d/agent.ready"
  local line
  if line=$("$build/bench/pod_start_bench" --apiserver "$api" --token bench-token \
      --node bench-node --pods "$count"); then
    printf 'isolation=%-4s %s load=%s\n' "$2" "$line" "$(cut -d' ' -f1-3 /proc/loadavg)"
  else
    run_failed "round $1 (isolation $2); logs in $d"
    tail -5 "$d"/*.log >&2
  fi
  stop_all
}

for r in $(seq 1 "$rounds"); do
  run "$r" none
  run "$r" auto
done
bench_exit
