#!/usr/bin/env bash
# Pod start and exec on a real node, with containers isolated (--isolation auto) and not
# (none), and the agent's port served with TLS both ways (as up.sh serves it) and in plaintext
# with the loopback token; runs alternating, a fresh store, apiserver and agent each time;
# prints one line per run. A run that fails is said (FAILED, with the logs' last lines) and
# makes the exit status 1.
#   tests/bench/run_pod_start_bench.sh [--pods 40] [--execs 100] [--rounds 2]
#                                      [--links "tls plaintext"] [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
count=40
execs=100
rounds=2
links="tls plaintext"
while [ $# -gt 0 ]; do
  case "$1" in
    --pods) count=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --execs) execs=$2; shift 2 ;;
    --links) links=$2; shift 2 ;;
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

# The agent's TLS: the cluster's certificates and the node's, as up.sh makes them.
"$root/deploy/lib/certs.sh" "$tmp/pki"
"$root/deploy/lib/agent-cert.sh" request "$tmp/pki/node"
"$root/deploy/lib/agent-cert.sh" sign "$tmp/pki" "$tmp/pki/node/agent.csr" bench-node 127.0.0.1 \
  "$tmp/pki/node/agent.crt"

run() {  # run ROUND ISOLATION LINK
  local d=$tmp/round-$1-$2-$3 api_flags=() agent_flags=(--agent-token-file "$tmp/agent.token")
  if [ "$3" = tls ]; then
    api_flags=(--agent-client-certificate "$tmp/pki/apiserver-agent-client.crt"
      --agent-client-key "$tmp/pki/apiserver-agent-client.key"
      --agent-certificate-authority "$tmp/pki/ca.crt")
    agent_flags=(--tls-cert-file "$tmp/pki/node/agent.crt"
      --tls-private-key-file "$tmp/pki/node/agent.key" --client-ca-file "$tmp/pki/ca.crt")
  fi
  mkdir -p "$d"
  start_control_plane "$d" "${api_flags[@]}"
  "$build/bin/mkube-agent" --apiserver "$api" --insecure-plaintext \
    --token-file "$tmp/node.token" "${agent_flags[@]}" --node-name bench-node \
    --node-ip 127.0.0.1 --listen 127.0.0.1:0 --pod-cidr 127.251.0.0/24 --root-dir "$d/agent" \
    --image-archive "$build/images/demo.tar" --isolation "$2" --ready-file "$d/agent.ready" \
    --log-level warn >"$d/agent.log" 2>&1 &
  pids+=($!)
  wait_file "$d/agent.ready"
  local line
  if line=$("$build/bench/pod_start_bench" --apiserver "$api" --token bench-token \
      --node bench-node --pods "$count" --execs "$execs"); then
    printf 'isolation=%-4s link=%-9s %s load=%s\n' "$2" "$3" "$line" \
      "$(cut -d' ' -f1-3 /proc/loadavg)"
  else
    run_failed "round $1 (isolation $2, $3); logs in $d"
    tail -5 "$d"/*.log >&2
  fi
  stop_all
}

for r in $(seq 1 "$rounds"); do
  for link in $links; do
    run "$r" none "$link"
    run "$r" auto "$link"
  done
done
bench_exit
