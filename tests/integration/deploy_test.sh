#!/usr/bin/env bash
# deploy/up.sh starts a working cluster in a given state dir, keeps its daemons running and
# remembers how it was started; deploy/down.sh stops it.
set -euo pipefail
trap 'echo "deploy_test.sh: failed at line $LINENO" >&2' ERR
root=$(cd "$(dirname "$0")/../.." && pwd)
state=$(mktemp -d)
# Addresses apart from a cluster the user may be running (block 1) and from the C++ tests'
# clusters (20-219).
block=$((220 + $$ % 35))
trap '"$root/deploy/down.sh" --state-dir "$state" --purge >/dev/null 2>&1 || true; rm -rf "$state"' EXIT

passed=0
pass() { passed=$((passed + 1)); echo "ok $passed: $*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }
source "$root/tests/lib/checks.sh"
# running PID: the process exists and is neither a zombie (Z: not yet reaped) nor being reaped
# (X), as alive() in deploy/lib/proc.sh counts them. The state is read once: a process reaped
# between two reads would otherwise look like one in neither state.
running() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}
# gone PID: the process has ended (a zombie until its parent reaps it counts as ended).
gone() { ! running "$1"; }
# new_pid NAME OLD: the pid file of NAME names a running process other than OLD.
new_pid() {
  local pid
  pid=$(cat "$state/run/$1.pid" 2>/dev/null) &&
    [ -n "$pid" ] && [ "$pid" != "$2" ] && running "$pid"
}
up() { "$root/deploy/up.sh" --state-dir "$state" "$@"; }

began=$(date +%s.%N)
out=$(up --store-listen 127.0.0.1:0 --apiserver-listen 127.0.0.1:0 --apiserver-http-listen 127.0.0.1:0 --agent-port 0 \
  --address-block "$block" --nodes 3) || fail "up.sh failed (exit $?); it said: $out"
echo "$out"
echo "up.sh took $(echo "$(date +%s.%N) - $began" | bc) s"
addr=$(cat "$state/run/store.addr")
grep -q "store (mkube, etcd v3 API, TLS): $addr" <<<"$out"
pid=$(cat "$state/run/store.pid")
running "$pid"
api_addr=$(cat "$state/run/apiserver.addr")
api_pid=$(cat "$state/run/apiserver.pid")
running "$api_pid"
grep -q "gRPC $api_addr (mkubectl" <<<"$out"
# Every daemon runs under a supervisor of its own.
daemons=(store apiserver scheduler controller-manager agent-master01 agent-node01 agent-node02
  agent-node03)
for d in "${daemons[@]}"; do
  running "$(cat "$state/run/$d.pid")" || fail "$d does not run"
  running "$(cat "$state/run/supervisors/$d.pid")" || fail "$d has no supervisor"
done
[ "$(stat -c %a "$state/pki/tokens.csv")" = 600 ]
[ "$(stat -c %a "$state/config")" = 600 ]
# The state folder and its keys: the owner's alone (pods run as other users).
[ "$(stat -c %a "$state")" = 700 ]
[ "$(stat -c %a "$state/pki")" = 700 ]
for key in ca apiserver store apiserver-etcd-client; do
  [ "$(stat -c %a "$state/pki/$key.key")" = 600 ] || fail "$key.key is not 0600"
done
# mkubectl reaches the apiserver over TLS with the kubeconfig up.sh wrote.
mkubectl="${MKUBE_BUILD_DIR:-$root/build}/bin/mkubectl"
ctl() { MKUBECONFIG=$state/config "$mkubectl" "$@"; }
grep -q '^default   *Active' <<<"$(ctl get namespaces)"
pass "up.sh starts every daemon, each under a supervisor, with the state dir its owner's alone"

# up.sh returned once the four agents' nodes were Ready; a pod placed on node01 runs the demo
# image, which answers on the pod's own address; logs and exec reach it through the apiserver.
# all_ready N: the cluster has N nodes, all Ready.
all_ready() {
  local nodes
  nodes=$(ctl get nodes --no-headers) || return 1
  [ "$(grep -c . <<<"$nodes")" = "$1" ] && [ "$(grep -c ' Ready ' <<<"$nodes")" = "$1" ]
}
all_ready 4
nodes=$(ctl get nodes)
grep -q '^master01 *Ready *master ' <<<"$nodes"
grep -q '^node03 *Ready *<none> ' <<<"$nodes"
grep -q 'key: node-role.kubernetes.io/master' <<<"$(ctl get node master01 -o yaml)"
grep -q '^pod/myapp created$' <<<"$(ctl apply -f "$root/deploy/examples/myapp-pod.yaml")"
# pod_running NAME: the pod's phase is Running.
pod_running() { [ "$(ctl get pod "$1" -o jsonpath='{.status.phase}')" = Running ]; }
until_ok 10 pod_running myapp
ip=$(ctl get pod myapp -o wide --no-headers | awk '{print $6}')
[[ "$ip" == "127.$block.2."* ]] || fail "pod IP '$ip' is not from node01's range"
reply=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://$ip/', timeout=5).read().decode().strip())")
[ "$reply" = 'Hello MyApp | Version: v1 | <a href="hostname.html">Pod Name</a>' ] ||
  fail "unexpected reply: $reply"
served_once() { grep -q '^GET / 200$' <<<"$(ctl logs myapp)"; }
until_ok 10 served_once
[ "$(ctl exec myapp -- sh -c 'echo $HOSTNAME')" = myapp ]
pass "a pod runs on node01 from its range; logs and exec reach it"

# Every example manifest is accepted as the seeds apply it (then removed at once).
for f in "$root"/deploy/examples/*.yaml; do
  [ "$(basename "$f")" = myapp-pod.yaml ] && continue
  grep -qE ' created$' <<<"$(ctl apply -f "$f")" || fail "$f was not created"
  ctl delete -f "$f" --grace-period=0 --force --wait=false >/dev/null 2>&1
  for _ in $(seq 1 100); do ctl get -f "$f" >/dev/null 2>&1 || break; sleep 0.1; done
done
pass "every example manifest is accepted"

# The store serves TLS and asks for a client certificate signed by the cluster's CA: etcdctl
# with the apiserver's works; without a certificate, or in plaintext, nothing is read.
export ETCDCTL_API=3
store_ctl() {
  etcdctl --endpoints="https://$addr" --cacert "$state/pki/ca.crt" \
    --cert "$state/pki/apiserver-etcd-client.crt" --key "$state/pki/apiserver-etcd-client.key" "$@"
}
store_ctl put deploy-test ok >/dev/null
has_deploy_test() { [ "$(store_ctl get deploy-test --print-value-only)" = ok ]; }
has_deploy_test
refused() {
  if timeout 20 etcdctl --dial-timeout 2s --command-timeout 3s "$@" get deploy-test >/dev/null 2>&1; then
    fail "the store answered etcdctl $*"
  fi
}
refused --endpoints="https://$addr" --cacert "$state/pki/ca.crt"
refused --endpoints="http://$addr"
pass "the store serves TLS to the cluster's client certificates only"

# A second up.sh without flags runs the cluster as it was started (port 0 for the store, the
# apiserver and the agents, block $block, three workers) and leaves what runs alone.
again=$(up)
grep -q "store already running (pid $pid," <<<"$again"
grep -q "apiserver already running (pid $api_pid," <<<"$again"
grep -q "agent-node03 already running" <<<"$again"
if grep -q "agent-node04" <<<"$again"; then fail "a bare up.sh started a fourth worker"; fi
[ "$(cat "$state/run/store.addr")" = "$addr" ]
[ "$(cat "$state/run/apiserver.addr")" = "$api_addr" ]
all_ready 4
pass "a bare up.sh reuses the recorded shape and leaves what runs alone"

# A flag other than the cluster's is refused, naming the flag, the recorded value and down.sh;
# nothing is started or stopped.
refused_flag() {
  local flag=$1 value=$2 recorded=$3 rc=0 msg
  msg=$(up "$flag" "$value" 2>&1) || rc=$?
  [ "$rc" = 2 ] || fail "up.sh $flag $value: exit status $rc, not 2: $msg"
  grep -qF -- "this cluster runs with $flag $recorded, not $value; stop it with down.sh first" \
    <<<"$msg" || fail "up.sh $flag $value said: $msg"
}
refused_flag --nodes 1 3
refused_flag --store etcd mkube
refused_flag --store-listen 127.0.0.1:2379 127.0.0.1:0
refused_flag --apiserver-listen 127.0.0.1:6443 127.0.0.1:0
refused_flag --agent-port 10250 0
refused_flag --address-block "$((block % 254 + 1))" "$block"
[ "$(cat "$state/run/store.pid")" = "$pid" ]
running "$pid"
pass "a flag other than the running cluster's is refused"

# A daemon that exits is started again by its supervisor, which says so in the daemon's log: the
# scheduler (as when it loses its lease), and the store, on the port it had bound, so that the
# apiserver, still dialling it, gets it back.
sched_pid=$(cat "$state/run/scheduler.pid")
sched_sup=$(cat "$state/run/supervisors/scheduler.pid")
kill -9 "$sched_pid"
until_ok 10 new_pid scheduler "$sched_pid"
grep -q "mkube: scheduler exited with status 137; restarting in 0.5s" "$state/logs/scheduler.log"
[ "$(cat "$state/run/supervisors/scheduler.pid")" = "$sched_sup" ]
kill -9 "$pid"
until_ok 10 new_pid store "$pid"
grep -q "mkube: store exited with status 137; restarting in" "$state/logs/store.log"
pid=$(cat "$state/run/store.pid")
[ "$(cat "$state/run/store.addr")" = "$addr" ] ||
  fail "the store came back on $(cat "$state/run/store.addr"), not $addr"
until_ok 10 has_deploy_test
# The apiserver's writes reach the store again.
until_ok 20 ctl label node node01 restarted=store --overwrite
[ "$(ctl get node node01 -o jsonpath='{.metadata.labels.restarted}')" = store ]
pass "the supervisors start the scheduler and the store again (the store on its port)"

# A daemon that died with its supervisor is started again by up.sh on the port it had (the
# agents still dial it); one whose supervisor alone died is adopted by a new supervisor.
api_sup=$(cat "$state/run/supervisors/apiserver.pid")
kill -9 "$api_sup" "$api_pid"
until_ok 10 gone "$api_pid"
cm_pid=$(cat "$state/run/controller-manager.pid")
kill -9 "$(cat "$state/run/supervisors/controller-manager.pid")"
again=$(up)
if grep -q "apiserver already running" <<<"$again"; then
  fail "up.sh took the killed apiserver for running"
fi
grep -q "controller-manager already running (pid $cm_pid, supervisor [0-9]* started for it)" \
  <<<"$again"
new_pid apiserver "$api_pid"
api_pid=$(cat "$state/run/apiserver.pid")
[ "$(cat "$state/run/apiserver.addr")" = "$api_addr" ] ||
  fail "the apiserver came back on $(cat "$state/run/apiserver.addr"), not $api_addr"
# node01's agent, which was not restarted, still gets its pods from the apiserver.
printf '%s\n' 'apiVersion: v1' 'kind: Pod' 'metadata: {name: pinned}' \
  'spec: {nodeName: node01, containers: [{name: c, image: soscscs/myapp:v1}]}' |
  ctl apply -f - >/dev/null
until_ok 20 pod_running pinned
kill -9 "$cm_pid"
until_ok 10 new_pid controller-manager "$cm_pid"
grep -q "mkube: controller-manager (pid $cm_pid, not started here) exited; restarting in" \
  "$state/logs/controller-manager.log"
pass "up.sh starts again what died with its supervisor, and supervises what lost it"

# An agent killed with -9 (with its supervisor) leaves its pod running (to adopt it on
# restart); down.sh stops it too, and every process up.sh recorded.
pod_pid=$(python3 -c 'import json,glob,sys; print(json.load(open(glob.glob(sys.argv[1] + "/nodes/node01/pods/*/logs/myapp/*.pid")[0]))["pid"])' "$state")
running "$pod_pid"
kill -9 "$(cat "$state/run/supervisors/agent-node01.pid")" "$(cat "$state/run/agent-node01.pid")"
recorded=()
for f in "$state"/run/*.pid "$state"/run/supervisors/*.pid; do recorded+=("$(cat "$f")"); done
[ ${#recorded[@]} -ge 16 ] || fail "only ${#recorded[@]} recorded pids"
began=$(date +%s.%N)
"$root/deploy/down.sh" --state-dir "$state"
echo "down.sh took $(echo "$(date +%s.%N) - $began" | bc) s"
if running "$pod_pid"; then
  fail "pod process $pod_pid survived down.sh"
fi
# Stopping the agents stopped their containers: the pod's address no longer answers.
if python3 -c "import urllib.request; urllib.request.urlopen('http://$ip/', timeout=1)" 2>/dev/null; then
  fail "the pod still answers after down.sh"
fi
for p in "${recorded[@]}"; do
  if running "$p"; then
    fail "pid $p still running after down.sh: $(cat "/proc/$p/stat" 2>&1);" \
      "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>&1); threads: $(ls "/proc/$p/task" 2>&1 | wc -l)"
  fi
done
pass "down.sh stops every daemon, supervisor and pod process"

# Data and shape survive down.sh: a bare up.sh starts the same four nodes (on new ports).
up >/dev/null
addr=$(cat "$state/run/store.addr")
has_deploy_test
all_ready 4
"$root/deploy/down.sh" --state-dir "$state" --purge
[ ! -d "$state" ]
pass "data and shape survive down.sh; --purge removes them"

# --store etcd: the same cluster on a real etcd, which is supervised too; a bare up.sh keeps it.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
out=$(up --store etcd --store-listen "127.0.0.1:$port" --apiserver-listen 127.0.0.1:0 \
  --apiserver-http-listen 127.0.0.1:0 \
  --agent-port 0 --address-block "$block")
grep -q "store (etcd, etcd v3 API, TLS): 127.0.0.1:$port" <<<"$out"
etcd_pid=$(cat "$state/run/store.pid")
grep -q '^kube-system   *Active' <<<"$(ctl get namespaces)"
again=$(up)
grep -q "store already running (pid $etcd_pid," <<<"$again"
refused_flag --store mkube etcd
kill -9 "$etcd_pid"
until_ok 10 new_pid store "$etcd_pid"
etcd_pid=$(cat "$state/run/store.pid")
until_ok 20 ctl label namespace default restarted=etcd --overwrite
recorded=()
for f in "$state"/run/*.pid "$state"/run/supervisors/*.pid; do recorded+=("$(cat "$f")"); done
"$root/deploy/down.sh" --state-dir "$state" --purge
for p in "${recorded[@]}"; do
  if running "$p"; then fail "pid $p still running after down.sh"; fi
done
if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), timeout=1)" 2>/dev/null; then
  fail "etcd still listens"
fi
pass "--store etcd: supervised, kept by a bare up.sh, stopped by down.sh"
echo "$passed passed, 0 failed"
