#!/usr/bin/env bash
# deploy/up.sh starts a working cluster in a given state dir and deploy/down.sh stops it.
set -euo pipefail
trap 'echo "deploy_test.sh: failed at line $LINENO" >&2' ERR
root=$(cd "$(dirname "$0")/../.." && pwd)
state=$(mktemp -d)
# Addresses apart from a cluster the user may be running (block 1) and from the C++ tests'
# clusters (20-219).
block=$((220 + $$ % 35))
trap '"$root/deploy/down.sh" --state-dir "$state" --purge >/dev/null 2>&1 || true; rm -rf "$state"' EXIT

began=$(date +%s.%N)
out=$("$root/deploy/up.sh" --state-dir "$state" --store-listen 127.0.0.1:0 --apiserver-listen 127.0.0.1:0 --agent-port 0 --address-block "$block" --nodes 3)
echo "$out"
echo "up.sh took $(echo "$(date +%s.%N) - $began" | bc) s"
addr=$(cat "$state/run/store.addr")
grep -q "store (mkube, etcd v3 API, TLS): $addr" <<<"$out"
pid=$(cat "$state/run/store.pid")
kill -0 "$pid"
api_pid=$(cat "$state/run/apiserver.pid")
kill -0 "$api_pid"
grep -q "apiserver (gRPC, TLS): $(cat "$state/run/apiserver.addr")" <<<"$out"
[ "$(stat -c %a "$state/pki/tokens.csv")" = 600 ]
[ "$(stat -c %a "$state/config")" = 600 ]
# The state folder and its keys: the owner's alone (pods run as other users).
[ "$(stat -c %a "$state")" = 700 ]
[ "$(stat -c %a "$state/pki")" = 700 ]
for key in ca apiserver store apiserver-etcd-client; do
  [ "$(stat -c %a "$state/pki/$key.key")" = 600 ] || { echo "$key.key is not 0600" >&2; exit 1; }
done
# mkubectl reaches the apiserver over TLS with the kubeconfig up.sh wrote.
mkubectl="${MKUBE_BUILD_DIR:-$root/build}/bin/mkubectl"
MKUBECONFIG=$state/config "$mkubectl" get namespaces | grep '^default   *Active' >/dev/null

# up.sh returned once the four agents' nodes were Ready; a pod placed on node01 runs the demo
# image, which answers on the pod's own address; logs and exec reach it through the apiserver.
ctl() { MKUBECONFIG=$state/config "$mkubectl" "$@"; }
[ "$(ctl get nodes --no-headers | grep -c ' Ready ')" = 4 ]
ctl get nodes | grep '^master01 *Ready *master ' >/dev/null
ctl get nodes | grep '^node03 *Ready *<none> ' >/dev/null
ctl get node master01 -o yaml | grep 'key: node-role.kubernetes.io/master' >/dev/null
ctl apply -f "$root/deploy/examples/myapp-pod.yaml" | grep '^pod/myapp created$' >/dev/null
for _ in $(seq 1 100); do ctl get pod myapp --no-headers | grep ' Running ' && break; sleep 0.1; done >/dev/null
ip=$(ctl get pod myapp -o wide --no-headers | awk '{print $6}')
[[ "$ip" == "127.$block.2."* ]] || { echo "pod IP '$ip' is not from node01's range" >&2; exit 1; }
reply=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://$ip/', timeout=5).read().decode().strip())")
[ "$reply" = 'Hello MyApp | Version: v1 | <a href="hostname.html">Pod Name</a>' ] || { echo "unexpected reply: $reply" >&2; exit 1; }
for _ in $(seq 1 100); do ctl logs myapp | grep '^GET / 200$' && break; sleep 0.1; done >/dev/null
ctl logs myapp | grep '^GET / 200$' >/dev/null
[ "$(ctl exec myapp -- sh -c 'echo $HOSTNAME')" = myapp ]

# Every example manifest is accepted as the seeds apply it (then removed at once).
for f in "$root"/deploy/examples/*.yaml; do
  [ "$(basename "$f")" = myapp-pod.yaml ] && continue
  ctl apply -f "$f" | grep -E ' created$' >/dev/null || { echo "$f was not created" >&2; exit 1; }
  ctl delete -f "$f" --grace-period=0 --force --wait=false >/dev/null 2>&1
  for _ in $(seq 1 100); do ctl get -f "$f" >/dev/null 2>&1 || break; sleep 0.1; done
done

# The store serves TLS and asks for a client certificate signed by the cluster's CA: etcdctl
# with the apiserver's works; without a certificate, or in plaintext, nothing is read.
export ETCDCTL_API=3
store_ctl() {
  etcdctl --endpoints="https://$addr" --cacert "$state/pki/ca.crt" \
    --cert "$state/pki/apiserver-etcd-client.crt" --key "$state/pki/apiserver-etcd-client.key" "$@"
}
store_ctl put deploy-test ok >/dev/null
[ "$(store_ctl get deploy-test --print-value-only)" = ok ]
refused() {
  if timeout 20 etcdctl --dial-timeout 2s --command-timeout 3s "$@" get deploy-test >/dev/null 2>&1; then
    echo "the store answered etcdctl $*" >&2; exit 1
  fi
}
refused --endpoints="https://$addr" --cacert "$state/pki/ca.crt"
refused --endpoints="http://$addr"

# A second up.sh leaves what runs alone and starts again a daemon killed a moment ago (still
# a zombie, which must not count as running).
sched_pid=$(cat "$state/run/scheduler.pid")
kill -9 "$sched_pid"
# Killed: the kernel has ended it (a zombie until reaped) once its state says so.
for _ in $(seq 1 100); do
  [ "$(awk '{print $3}' "/proc/$sched_pid/stat" 2>/dev/null || echo gone)" != Z ] || break
  [ -e "/proc/$sched_pid" ] || break
  sleep 0.01
done
# (Without --address-block: the block the cluster was started with.)
again=$("$root/deploy/up.sh" --state-dir "$state" --store-listen 127.0.0.1:0 --apiserver-listen 127.0.0.1:0 --agent-port 0 --nodes 3)
grep -q "store already running (pid $pid)" <<<"$again"
grep -q "apiserver already running (pid $api_pid)" <<<"$again"
! grep -q "scheduler already running" <<<"$again"
[ "$(cat "$state/run/scheduler.pid")" != "$sched_pid" ]
kill -0 "$(cat "$state/run/scheduler.pid")"

# An agent killed with -9 leaves its pod running (to adopt it on restart); down.sh stops it too.
pod_pid=$(python3 -c 'import json,glob,sys; print(json.load(open(glob.glob(sys.argv[1] + "/nodes/node01/pods/*/logs/myapp/*.pid")[0]))["pid"])' "$state")
kill -0 "$pod_pid"
kill -9 "$(cat "$state/run/agent-node01.pid")"
began=$(date +%s.%N)
"$root/deploy/down.sh" --state-dir "$state"
echo "down.sh took $(echo "$(date +%s.%N) - $began" | bc) s"
# running PID: the process exists and is neither a zombie (Z: not yet reaped) nor being reaped
# (X), as alive() in deploy/lib/proc.sh counts them. The state is read once: a process reaped
# between two reads would otherwise look like one in neither state.
running() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}
if running "$pod_pid"; then
  echo "pod process $pod_pid survived down.sh" >&2; exit 1
fi
# Stopping the agents stopped their containers: the pod's address no longer answers.
if python3 -c "import urllib.request; urllib.request.urlopen('http://$ip/', timeout=1)" 2>/dev/null; then
  echo "the pod still answers after down.sh" >&2; exit 1
fi
for p in "$pid" "$api_pid"; do
  if running "$p"; then
    echo "pid $p still running after down.sh: $(cat "/proc/$p/stat" 2>&1); $(tr '\0' ' ' <"/proc/$p/cmdline" 2>&1); threads: $(ls "/proc/$p/task" 2>&1 | wc -l)" >&2
    exit 1
  fi
done

# Data survives a restart in the same state dir.
"$root/deploy/up.sh" --state-dir "$state" --store-listen 127.0.0.1:0 --apiserver-listen 127.0.0.1:0 --agent-port 0 --address-block "$block" >/dev/null
addr=$(cat "$state/run/store.addr")
[ "$(store_ctl get deploy-test --print-value-only)" = ok ]
"$root/deploy/down.sh" --state-dir "$state" --purge
[ ! -d "$state" ]

# --store etcd: the same cluster on a real etcd.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
out=$("$root/deploy/up.sh" --state-dir "$state" --store etcd --store-listen "127.0.0.1:$port" --apiserver-listen 127.0.0.1:0 --agent-port 0 --address-block "$block")
grep -q "store (etcd, etcd v3 API, TLS): 127.0.0.1:$port" <<<"$out"
etcd_pid=$(cat "$state/run/store.pid")
MKUBECONFIG=$state/config "$mkubectl" get namespaces | grep '^kube-system   *Active' >/dev/null
"$root/deploy/down.sh" --state-dir "$state" --purge
if running "$etcd_pid"; then
  echo "etcd (pid $etcd_pid) still running after down.sh" >&2; exit 1
fi
if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), timeout=1)" 2>/dev/null; then
  echo "etcd still listens" >&2; exit 1
fi
echo "2 passed, 0 failed"
