#!/usr/bin/env bash
# Pulling a real image: an image of --mb MB (the node's static busybox and that many random,
# incompressible bytes in a second layer), served by Debian's docker-registry on loopback.
# mkube: a fresh node (store, apiserver, agent) starts one pod of it, create to Running: the
# download, each blob checked against its digest, the layers applied and the container
# started. skopeo: `skopeo copy` of the same image into a fresh OCI layout (the download and
# its digest checks alone). Alternating, each pair with its ratio; then pods started one after
# another with the image present, to set beside run_pod_start_bench.sh's busybox figures.
# A run that fails is said (FAILED) and makes the exit status 1.
#   tests/bench/run_pull_bench.sh [--rounds 3] [--mb 50] [--pods 20] [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
rounds=3
mb=50
count=20
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --pods) count=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
for tool in docker-registry skopeo curl python3; do
  command -v "$tool" >/dev/null || { echo "run_pull_bench.sh: $tool is not on PATH" >&2; exit 1; }
done
source "$root/tests/bench/lib.sh"
source "$root/deploy/lib/registry.sh"
{
  echo 'bench-token,bench,1,"system:masters"'
  echo 'node-token,system:node:bench-node,2,"system:nodes"'
} >"$tmp/tokens.csv"
echo node-token >"$tmp/node.token"
echo agent-token >"$tmp/agent.token"

registry=127.0.0.1:$(free_port)
registry_config "$tmp/registry.yml" "$registry" "$tmp/registry-data"
docker-registry serve "$tmp/registry.yml" >"$tmp/registry.log" 2>&1 &
registry_pid=$!
pids+=($registry_pid)
for _ in $(seq 1 100); do registry_answers "$registry" && break; sleep 0.1; done
echo "making and pushing a $mb MB image to $registry ..." >&2
python3 "$root/tests/integration/oci_layout.py" "$tmp/layout" big "big:$mb" >/dev/null
skopeo copy --quiet --dest-tls-verify=false "oci:$tmp/layout:big" "docker://$registry/bench/big:v1"
image=$registry/bench/big:v1
size=$(du -sb "$tmp/registry-data" | cut -f1)

now_ms() { echo $(($(date +%s%N) / 1000000)); }

skopeo_copy() {  # skopeo_copy ROUND: prints its seconds
  local d=$tmp/skopeo-$1 began
  began=$(now_ms)
  skopeo copy --quiet --src-tls-verify=false "docker://$image" "oci:$d:big" || return 1
  awk -v ms=$(($(now_ms) - began)) 'BEGIN {printf "%.2f", ms / 1000}'
}

mkube_pull() {  # mkube_pull ROUND: prints "FIRST_POD_S PRESENT_FIGURES"
  local d=$tmp/mkube-$1 first present
  mkdir -p "$d"
  start_control_plane "$d"
  "$build/bin/mkube-agent" --apiserver "$api" --insecure-plaintext \
    --token-file "$tmp/node.token" --agent-token-file "$tmp/agent.token" --node-name bench-node \
    --node-ip 127.0.0.1 --listen 127.0.0.1:0 --pod-cidr 127.252.0.0/24 --root-dir "$d/agent" \
    --insecure-registry "$registry" --ready-file "$d/agent.ready" \
    --log-level warn >"$d/agent.log" 2>&1 &
  pids+=($!)
  wait_file "$d/agent.ready"
  first=$("$build/bench/pod_start_bench" --apiserver "$api" --token bench-token \
    --node bench-node --pods 1 --execs 0 --no-burst --image "$image") || return 1
  present=$("$build/bench/pod_start_bench" --apiserver "$api" --token bench-token \
    --node bench-node --pods "$count" --execs 0 --image "$image") || return 1
  stop_node
  echo "$(awk -v ms="$(field "$first" seq_max_ms)" 'BEGIN {printf "%.2f", ms / 1000}') $present"
}

# stop_node: the processes of a round, the registry left running.
stop_node() {
  local p
  for p in "${pids[@]}"; do
    [ "$p" = "$registry_pid" ] || { kill -9 "$p" && wait "$p"; } 2>/dev/null || true
  done
  pids=("$registry_pid")
}

echo "image: $mb MB of random bytes and busybox, $size bytes in the registry" >&2
for r in $(seq 1 "$rounds"); do
  if ! s=$(skopeo_copy "$r"); then
    run_failed "round $r: skopeo copy"
    continue
  fi
  if ! m=$(mkube_pull "$r"); then
    run_failed "round $r: mkube (logs in $tmp/mkube-$r)"
    tail -5 "$tmp/mkube-$r"/*.log >&2
    stop_node
    continue
  fi
  read -r first present <<<"$m"
  printf 'round=%d mkube_pull_and_start_s=%s skopeo_copy_s=%s ratio=%s with_image_present: %s load=%s\n' \
    "$r" "$first" "$s" "$(awk -v a="$first" -v b="$s" 'BEGIN {printf "%.2f", a / b}')" "$present" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
done
bench_exit
