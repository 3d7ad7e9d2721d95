#!/usr/bin/env bash
# Runs store_bench against mkube-store and a real etcd side by side (same machine, same
# client, loopback, temp dirs, both syncing every write) and prints one table with ratios.
#   tests/bench/run_store_bench.sh [--seconds S] [--rounds R] [--build DIR] [--tls]
#       [--clients "1 16 256 1000"] [--watchers 1000] [--streams 10] [--watch-puts 1000]
# --tls: both serve TLS and require client certificates (etcd's --client-cert-auth).
# Each figure is the best of R interleaved rounds, so a noisy neighbour hurts both alike.
# Besides throughput and latency, each server's CPU per operation (user and system, from
# /proc, over the run) and the client's own. Only successful calls count; a run with failed
# calls is reported (FAILED, on stderr), left out of the table, and makes the exit status 1.
# etcd is the only peer: the comparison of two HTTP/2 cores (--peer nghttp2) went with ours.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
seconds=3
rounds=2
clients="1 16 256 1000"
watchers=1000
streams=10
watch_puts=1000
tls=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --watchers) watchers=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --watch-puts) watch_puts=$2; shift 2 ;;
    --tls) tls=1; shift ;;
    --peer)
      [ "${2:-}" = etcd ] || {
        echo "--peer ${2:-}: etcd is the only peer now. The comparison with mkube-store's own" \
          "HTTP/2 core (--peer nghttp2, --http2-core) went with that core on 2026-12-03;" \
          "tests/bench/README.md keeps its figures." >&2
        exit 2
      }
      shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
bench=$build/bench/store_bench
[ -x "$bench" ] || { echo "build first: $bench is missing" >&2; exit 1; }
command -v etcd >/dev/null || { echo "etcd (etcd-server) is not installed; run deploy/deps.sh" >&2; exit 1; }

source "$root/tests/bench/lib.sh"

server_tls=()
client_tls=()
if [ "$tls" = 1 ]; then
  "$root/deploy/lib/certs.sh" "$tmp/pki"
  p=$tmp/pki
  server_tls=(--cert-file "$p/store.crt" --key-file "$p/store.key" --trusted-ca-file "$p/ca.crt"
    --client-cert-auth)
  client_tls=(--cacert "$p/ca.crt" --cert "$p/apiserver-etcd-client.crt"
    --key "$p/apiserver-etcd-client.key")
fi

start_mkube() {
  rm -rf "$tmp/mkube" "$tmp/mkube.addr"
  "$build/bin/mkube-store" --data-dir "$tmp/mkube" --listen 127.0.0.1:0 \
    --address-file "$tmp/mkube.addr" --log-level warn "${server_tls[@]}" >"$tmp/mkube.log" 2>&1 &
  pids+=($!)
  mkube_pid=$!
  wait_file "$tmp/mkube.addr"
  mkube=$(cat "$tmp/mkube.addr")
}

start_mkube
if [ "$tls" = 1 ]; then start_etcd "$tmp/etcd" "$tmp/pki"; else start_etcd "$tmp/etcd"; fi
declare -A best
run() {  # run SYSTEM LABEL ARGS...
  local sys=$1 label=$2; shift 2
  local ep=$mkube pid=$mkube_pid
  [ "$sys" = etcd ] && { ep=$etcd_ep; pid=$etcd_pid; }
  local line cpu0 cpu1
  cpu0=$(cpu_s "$pid")
  if ! line=$("$bench" --endpoint "$ep" "${client_tls[@]}" "$@"); then
    run_failed "$sys $label: $line"
    return
  fi
  cpu1=$(cpu_s "$pid")
  local errors
  errors=$(field "$line" errors)
  if [ -z "$errors" ] || [ "$errors" != 0 ]; then  # store_bench also exits 1 then
    run_failed "$sys $label: errors=${errors:-?}: $line"
    return
  fi
  local tp p50 p99 ops client_us
  tp=$(field "$line" throughput); p50=$(field "$line" p50_ms); p99=$(field "$line" p99_ms)
  # Operations the server did: calls for put and range, puts for watch (whose events it fans
  # out to every watcher: its CPU per put includes that).
  ops=$(field "$line" ops); [ -n "$ops" ] || ops=$(field "$line" puts)
  client_us=$(field "$line" client_cpu_us_per_op); [ -n "$client_us" ] || client_us=-
  local key="$sys|$label"
  if [ -z "${best[$key.tp]:-}" ] || awk "BEGIN{exit !($tp > ${best[$key.tp]})}"; then
    best[$key.tp]=$tp; best[$key.p50]=$p50; best[$key.p99]=$p99; best[$key.client]=$client_us
    best[$key.cpu]=$(awk "BEGIN{printf \"%.1f\", ($ops > 0 ? ($cpu1 - $cpu0) * 1e6 / $ops : 0)}")
  fi
}

labels=()
for c in $clients; do labels+=("put c=$c"); done
labels+=("range c=16" "watch ${watchers}w")
for r in $(seq 1 "$rounds"); do
  for c in $clients; do
    for sys in mkube etcd; do run "$sys" "put c=$c" put --clients "$c" --seconds "$seconds"; done
  done
  for sys in mkube etcd; do run "$sys" "range c=16" range --clients 16 --seconds "$seconds"; done
  for sys in mkube etcd; do
    run "$sys" "watch ${watchers}w" watch --watchers "$watchers" --streams "$streams" --puts "$watch_puts"
  done
done
mkube_rss=$(rss_mb "$mkube_pid"); etcd_rss=$(rss_mb "$etcd_pid")

printf '%-14s | %12s %12s %7s | %9s %9s | %9s %9s | %7s %7s %7s\n' "workload" "mkube ops/s" \
  "etcd ops/s" "ratio" "mk p50ms" "etcd p50" "mk p99ms" "etcd p99" "mk us" "etcd us" "cli us"
printf -- '---------------+------------------------------------+---------------------+---------------------+------------------------\n'
for l in "${labels[@]}"; do
  mt=${best["mkube|$l.tp"]:-}; et=${best["etcd|$l.tp"]:-}
  if [ -z "$mt" ] || [ -z "$et" ]; then
    missing=()
    if [ -z "$mt" ]; then missing+=(mkube-store); fi
    if [ -z "$et" ]; then missing+=(etcd); fi
    printf '%-14s | no figures: failed in every round on %s\n' "$l" "${missing[*]}"
    continue
  fi
  printf '%-14s | %12.0f %12.0f %6.2fx | %9.3f %9.3f | %9.3f %9.3f | %7s %7s %7s\n' "$l" "$mt" \
    "$et" "$(awk "BEGIN{print $mt/$et}")" "${best["mkube|$l.p50"]}" "${best["etcd|$l.p50"]}" \
    "${best["mkube|$l.p99"]}" "${best["etcd|$l.p99"]}" "${best["mkube|$l.cpu"]}" \
    "${best["etcd|$l.cpu"]}" "${best["mkube|$l.client"]}"
done
echo "RSS after the run: mkube-store ${mkube_rss} MiB, etcd ${etcd_rss} MiB"
[ "$tls" = 0 ] || echo "(TLS 1.3 both ways, client certificates required, RSA 2048 keys)"
echo "(watch: events delivered per second to all watchers; latency from put to delivery)"
echo "(us: CPU microseconds per operation, user and system: mk and etcd of the server, from"
echo " /proc over the run; cli of store_bench itself driving mkube-store; watch: per put)"
bench_exit
