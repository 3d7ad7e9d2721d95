#!/usr/bin/env bash
# The Kubernetes HTTP API beside gRPC on one mkube-apiserver (over one mkube-store), in one run:
#  1. watch fan-out: 1,000 gRPC watchers, then (on a fresh apiserver) 1,000 HTTP watchers
#     (JSON lines), while pods are created over gRPC at 300/s; p50/p99 create-to-delivery;
#     the two sides alternate for --rounds rounds;
#  2. a list of the pods created (10,000 by default): over gRPC (decoded into protobuf
#     objects) and over HTTP as JSON and as a Table (kubectl's Accept; the bytes received);
#  3. the apiserver's RSS with 1,000 idle HTTP watch connections open, and without them.
# A run with errors says so (FAILED) and the exit status is 1.
#   tests/bench/run_http_bench.sh [--watchers 1000] [--pods 10000] [--create-rate 300]
#                                 [--idle 1000] [--rounds 2] [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
watchers=1000
pods=10000
rate=300
idle=1000
rounds=2
while [ $# -gt 0 ]; do
  case "$1" in
    --watchers) watchers=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --create-rate) rate=$2; shift 2 ;;
    --idle) idle=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$root/tests/bench/lib.sh"
printf 'bench-token,bench,1,"system:masters"\n' >"$tmp/tokens.csv"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

start_store() {  # a fresh store in $tmp/$1
  "$build/bin/mkube-store" --data-dir "$tmp/$1" --listen 127.0.0.1:0 \
    --address-file "$tmp/$1.addr" --log-level warn >"$tmp/$1.log" 2>&1 &
  store_pid=$!
  pids+=($store_pid)
  wait_file "$tmp/$1.addr"
}
start_api() {  # NAME STORE: sets api_pid, grpc_addr, http_addr
  local name=$1
  "$build/bin/mkube-apiserver" --listen 127.0.0.1:0 --store-endpoints "$2" \
    --token-file "$tmp/tokens.csv" --insecure-plaintext --address-file "$tmp/$name.api" \
    --http-listen 127.0.0.1:0 --http-address-file "$tmp/$name.http" \
    --log-level warn >"$tmp/$name.api.log" 2>&1 &
  api_pid=$!
  pids+=($api_pid)
  wait_file "$tmp/$name.api"
  wait_file "$tmp/$name.http"
  grpc_addr=$(cat "$tmp/$name.api")
  http_addr=$(cat "$tmp/$name.http")
}
stop_api() { { kill -9 "$api_pid" && wait "$api_pid"; } 2>/dev/null || true; }

# 1. Fan-out, each side on a fresh store and apiserver, the same load.
fanout() {  # NAME [--http]
  local name=$1 line
  shift
  start_store "$name-store"
  start_api "$name" "$(cat "$tmp/$name-store.addr")"
  local extra=()
  [ $# -gt 0 ] && extra=(--http "$http_addr")
  echo "fan-out over $name: $watchers watchers, $pods pods at $rate/s..." >&2
  if ! line=$("$build/bench/watch_fanout" --apiserver "$grpc_addr" --token bench-token \
      --watchers "$watchers" --pods "$pods" --create-rate "$rate" --warmup-pods 300 "${extra[@]}"); then
    run_failed "fan-out over $name: $line (apiserver log: $tmp/$name.api.log)"
  fi
  printf '%-6s %s apiserver_rss_mib=%s\n' "$name" "$line" "$(rss_mb "$api_pid")"
}
# The sides alternate, round by round, so that a busy moment of the machine hits both.
for ((round = 1; round <= rounds; round++)); do
  fanout "grpc$round"
  stop_api
  fanout "http$round" --http
  if [ "$round" -lt "$rounds" ]; then stop_api; fi
done
# The last apiserver and its store hold the pods: the lists read them.

# 2. Lists of everything over HTTP, each timed five times in one client (the median kept):
# the time to the last byte, as JSON and as kubectl's Table. The gRPC list is watch_fanout's
# list_ms above (decoded into protobuf objects), and mkubectl's whole run beside it.
read -r items json_ms json_bytes table_ms table_bytes < <(python3 - "$http_addr" <<'PY'
import http.client, json, sys, time
host, port = sys.argv[1].rsplit(":", 1)
def timed(accept):
    times, body = [], b""
    for _ in range(5):
        c = http.client.HTTPConnection(host, int(port), timeout=60)
        t0 = time.perf_counter()
        c.request("GET", "/api/v1/pods", headers={"Authorization": "Bearer bench-token", "Accept": accept})
        r = c.getresponse()
        body = r.read()
        times.append((time.perf_counter() - t0) * 1000)
        if r.status != 200:
            sys.exit("list answered %d" % r.status)
        c.close()
    return sorted(times)[2], body
json_ms, body = timed("application/json")
items = len(json.loads(body)["items"])
table_ms, table = timed("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
print(items, round(json_ms, 1), len(body), round(table_ms, 1), len(table))
PY
)
t0=$(date +%s%N)
MKUBECONFIG=/dev/null "$build/bin/mkubectl" --server "$grpc_addr" --token bench-token get pods -A -o name \
  >/dev/null || run_failed "mkubectl get pods"
mkubectl_ms=$((($(date +%s%N) - t0) / 1000000))
echo "list items=$items http_json_ms=$json_ms (bytes=$json_bytes) http_table_ms=$table_ms" \
  "(bytes=$table_bytes) mkubectl_get_pods_o_name_ms=$mkubectl_ms"

# 3. Idle watch connections over HTTP: the apiserver's RSS before and with them.
# On a fresh store and apiserver: the fan-out's peak would hide them.
stop_api
start_store idle-store
start_api idle "$(cat "$tmp/idle-store.addr")"
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
before=$(rss_kb "$api_pid")
python3 - "$http_addr" "$idle" "$tmp/idle.ready" <<'PY' &
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n, ready = int(sys.argv[2]), sys.argv[3]
socks = []
for i in range(n):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"GET /api/v1/namespaces/default/pods?watch=1&labelSelector=bench-idle%3D1 HTTP/1.1\r\n"
              b"Host: bench\r\nAuthorization: Bearer bench-token\r\n\r\n")
    socks.append(s)
for s in socks:  # each answered: its watch is open
    if b"200 OK" not in s.recv(4096):
        sys.exit("a watch was not answered 200")
open(ready, "w").write("ok")
time.sleep(600)
PY
idler=$!
pids+=($idler)
wait_file "$tmp/idle.ready"
with=$(rss_kb "$api_pid")
echo "idle_http_watches=$idle apiserver_rss_kib_before=$before with=$with" \
  "per_1000_mib=$(python3 -c "print(round(($with - $before) * 1000 / $idle / 1024, 1))")"
bench_exit
