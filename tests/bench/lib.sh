# Shared by the benchmark scripts: a temp folder, processes killed by pid on exit, ports,
# waiting for files, and a real etcd on loopback.
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_file() { for _ in $(seq 1 300); do [ -s "$1" ] && return; sleep 0.1; done; echo "timed out waiting for $1" >&2; exit 1; }
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }

# start_etcd DIR: a single-member etcd on free loopback ports; sets etcd_pid and etcd_ep.
start_etcd() {
  local cp pp
  cp=$(free_port); pp=$(free_port)
  etcd --data-dir "$1" --listen-client-urls "http://127.0.0.1:$cp" \
    --advertise-client-urls "http://127.0.0.1:$cp" --listen-peer-urls "http://127.0.0.1:$pp" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "default=http://127.0.0.1:$pp" \
    --log-level warn --logger zap >"$1.log" 2>&1 &
  etcd_pid=$!
  pids+=($etcd_pid)
  etcd_ep=127.0.0.1:$cp
  for _ in $(seq 1 100); do
    ETCDCTL_API=3 etcdctl --endpoints="$etcd_ep" endpoint health >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "etcd did not start (see $1.log)" >&2
  exit 1
}
