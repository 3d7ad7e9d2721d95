# Shared by the benchmark scripts: a temp folder, processes killed by pid on exit, ports,
# waiting for files, a process's CPU, a real etcd on loopback, and the count of failed runs.
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
# cpu_s PID: the CPU seconds (user and system) the process has used so far.
clk_tck=$(getconf CLK_TCK)
cpu_s() { sed 's/^.*) //' "/proc/$1/stat" | awk -v t="$clk_tck" '{printf "%.2f", ($12 + $13) / t}'; }

# A run that failed or counted errors is said on stderr (run_failed WHAT) and counted;
# bench_exit, last, ends the script with status 1 if any did. A benchmark with errors must
# never read as a benchmark with figures.
failed_runs=0
run_failed() {
  echo "FAILED: $*" >&2
  failed_runs=$((failed_runs + 1))
}
bench_exit() {
  if [ "$failed_runs" -gt 0 ]; then
    echo "$failed_runs run(s) failed or had errors (above): their figures are not results" >&2
    exit 1
  fi
}
# field LINE NAME: the value of NAME= in a line of key=value figures (empty when absent).
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }

# start_etcd DIR [PKI]: a single-member etcd on free loopback ports; sets etcd_pid and
# etcd_ep. With PKI (a folder made by deploy/lib/certs.sh) it serves TLS with store.crt and
# requires client certificates; its health check shows apiserver-etcd-client.crt.
start_etcd() {
  local dir=$1 pki=${2:-} cp pp scheme=http
  local tls=() check=()
  if [ -n "$pki" ]; then
    scheme=https
    tls=(--cert-file "$pki/store.crt" --key-file "$pki/store.key" --trusted-ca-file "$pki/ca.crt"
      --client-cert-auth)
    check=(--cacert "$pki/ca.crt" --cert "$pki/apiserver-etcd-client.crt"
      --key "$pki/apiserver-etcd-client.key")
  fi
  cp=$(free_port); pp=$(free_port)
  etcd --data-dir "$dir" --listen-client-urls "$scheme://127.0.0.1:$cp" \
    --advertise-client-urls "$scheme://127.0.0.1:$cp" --listen-peer-urls "http://127.0.0.1:$pp" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "default=http://127.0.0.1:$pp" \
    --log-level warn --logger zap "${tls[@]}" >"$dir.log" 2>&1 &
  etcd_pid=$!
  pids+=($etcd_pid)
  etcd_ep=127.0.0.1:$cp
  for _ in $(seq 1 100); do
    ETCDCTL_API=3 etcdctl --endpoints="$scheme://$etcd_ep" "${check[@]}" endpoint health >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "etcd did not start (see $dir.log)" >&2
  exit 1
}

# Stops what the round started (kill -9 by pid), ready for the next.
stop_all() {
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  pids=()
}

# start_control_plane DIR [APISERVER FLAG...]: mkube-store and mkube-apiserver (tokens from
# $tmp/tokens.csv and $tmp/agent.token), logs in DIR. Sets api (the apiserver's address).
start_control_plane() {
  local d=$1
  shift
  "$build/bin/mkube-store" --data-dir "$d/store" --listen 127.0.0.1:0 \
    --address-file "$d/store.addr" --log-level warn >"$d/store.log" 2>&1 &
  pids+=($!)
  wait_file "$d/store.addr"
  "$build/bin/mkube-apiserver" --listen 127.0.0.1:0 --store-endpoints "$(cat "$d/store.addr")" \
    --token-file "$tmp/tokens.csv" --insecure-plaintext --agent-token-file "$tmp/agent.token" \
    --address-file "$d/api.addr" --log-level warn "$@" >"$d/api.log" 2>&1 &
  pids+=($!)
  wait_file "$d/api.addr"
  api=$(cat "$d/api.addr")
}

# start_sim_cluster DIR NODES: start_control_plane, then mkube-agent with NODES simulated nodes
# in ten zones (token $tmp/bench.token) and mkube-scheduler ($tmp/sched.token), logs in DIR.
# Sets api, sched_pid and registered (seconds the nodes took to register).
start_sim_cluster() {
  local d=$1 nodes=$2
  start_control_plane "$d"
  local began=$SECONDS
  "$build/bin/mkube-agent" --apiserver "$api" --insecure-plaintext --token-file "$tmp/bench.token" \
    --agent-token-file "$tmp/agent.token" --root-dir "$d/agent" --simulated "$nodes" \
    --simulated-zones 10 --ready-file "$d/agent.ready" --log-level warn >"$d/agent.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 1200); do [ -s "$d/agent.ready" ] && break; sleep 0.1; done
  [ -s "$d/agent.ready" ] || { echo "simulated nodes did not come up (see $d/agent.log)" >&2; exit 1; }
  registered=$((SECONDS - began))
  "$build/bin/mkube-scheduler" --apiserver "$api" --insecure-plaintext --token-file "$tmp/sched.token" \
    --ready-file "$d/sched.ready" --log-level warn >"$d/sched.log" 2>&1 &
  sched_pid=$!
  pids+=($sched_pid)
  wait_file "$d/sched.ready"
}
