#!/usr/bin/env bash
# Installs what is missing, builds, and starts a local mkube cluster in the background.
#   ./deploy/up.sh [--nodes N] [--simulated-nodes N] [--state-dir DIR] [--store mkube|etcd]
#                  [--store-listen HOST:PORT] [--apiserver-listen HOST:PORT] [--agent-port PORT]
#                  [--address-block B]
# Agents: master01 (tainted node-role.kubernetes.io/master:NoSchedule), node01 ... nodeN
# (N=2 by default), each on its own address (127.0.B.1, .2, ...) with pod addresses from
# 127.B.<i>.0/24 (B=1 unless --address-block says otherwise; kept in the state dir: two
# clusters on one machine need different blocks and ports); --simulated-nodes adds one agent
# holding that many simulated nodes (sim-0000 ...: they run no processes, and report their
# pods Running at once). Idempotent: what runs is left alone, a daemon that died is started
# again. Returns once every node is Ready.
# MKUBE_CONTROLLER_MANAGER_FLAGS and MKUBE_AGENT_FLAGS add flags to those daemons (tests use
# them for short node grace periods).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${MKUBE_STATE_DIR:-$HOME/.mkube}
store_listen=127.0.0.1:2379
apiserver_listen=127.0.0.1:6443
store_kind=mkube
agent_port=10250
workers=2
simulated=0
block=
while [ $# -gt 0 ]; do
  case "$1" in
    --state-dir) state=$2; shift 2 ;;
    --state-dir=*) state=${1#*=}; shift ;;
    --store-listen) store_listen=$2; shift 2 ;;
    --store-listen=*) store_listen=${1#*=}; shift ;;
    --apiserver-listen) apiserver_listen=$2; shift 2 ;;
    --apiserver-listen=*) apiserver_listen=${1#*=}; shift ;;
    --agent-port) agent_port=$2; shift 2 ;;
    --agent-port=*) agent_port=${1#*=}; shift ;;
    --store) store_kind=$2; shift 2 ;;
    --store=*) store_kind=${1#*=}; shift ;;
    --nodes) workers=$2; shift 2 ;;
    --nodes=*) workers=${1#*=}; shift ;;
    --simulated-nodes) simulated=$2; shift 2 ;;
    --simulated-nodes=*) simulated=${1#*=}; shift ;;
    --address-block) block=$2; shift 2 ;;
    --address-block=*) block=${1#*=}; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "up.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

case "$store_kind" in
  mkube|etcd) ;;
  *) echo "up.sh: --store must be mkube or etcd, not '$store_kind'" >&2; exit 2 ;;
esac
[[ "$workers" =~ ^[0-9]+$ ]] && [ "$workers" -le 250 ] ||
  { echo "up.sh: --nodes must be a number from 0 to 250, not '$workers'" >&2; exit 2; }
[[ "$simulated" =~ ^[0-9]+$ ]] ||
  { echo "up.sh: --simulated-nodes must be a number, not '$simulated'" >&2; exit 2; }
# The address block: as given, else as this cluster was started with, else 1. Agents that
# run keep theirs, so a different block needs down.sh first.
recorded=$(cat "$state/run/address-block" 2>/dev/null || true)
[ -n "$block" ] || block=${recorded:-1}
[[ "$block" =~ ^[0-9]+$ ]] && [ "$((10#$block))" -ge 1 ] && [ "$((10#$block))" -le 254 ] ||
  { echo "up.sh: --address-block must be a number from 1 to 254, not '$block'" >&2; exit 2; }
block=$((10#$block))
if [ -n "$recorded" ] && [ "$recorded" != "$block" ]; then
  for f in "$state"/run/agent-*.pid; do
    [ -e "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null || continue
    echo "up.sh: this cluster runs with --address-block $recorded; stop it with down.sh first" >&2
    exit 2
  done
fi
nodes=(master01)
for i in $(seq 1 "$workers"); do nodes+=("$(printf 'node%02d' "$i")"); done
source "$root/deploy/lib/proc.sh"

"$root/deploy/deps.sh"
"$root/deploy/build.sh" >/dev/null
bin=${MKUBE_BUILD_DIR:-$root/build}/bin
mkdir -p "$state/run" "$state/logs" "$state/store"
state=$(cd "$state" && pwd)
# The cluster's keys, tokens and data: its owner's alone (pods run as other users).
chmod 700 "$state"
echo "$block" >"$state/run/address-block"

# running PID_FILE WORD: the recorded daemon is alive (not a zombie) and still the program
# whose command line has WORD.
running() { [ -f "$1" ] && alive "$(cat "$1")" "$2"; }

# start NAME ADDRESS_FILE COMMAND...: starts a daemon unless it already runs, waits for its address.
start() {
  local name=$1 addr_file=$2; shift 2
  local pid_file=$state/run/$name.pid
  if running "$pid_file" "$1"; then
    echo "$name already running (pid $(cat "$pid_file"))"
    return
  fi
  rm -f "$addr_file"
  nohup "$@" >>"$state/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$pid_file"
  for _ in $(seq 1 100); do
    [ -s "$addr_file" ] && return
    if ! alive "$(cat "$pid_file")"; then
      echo "$name failed to start; last lines of $state/logs/$name.log:" >&2
      tail -n 20 "$state/logs/$name.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "$name did not report its address within 10 s (see $state/logs/$name.log)" >&2
  exit 1
}

# Credentials: a CA, serving certificates for the apiserver and the store, and the client
# certificate the apiserver shows the store (which serves TLS and asks every client for one).
# Names beyond 127.0.0.1 and localhost: a listen address on another of this host's addresses
# (taken when the certificates are first made).
sans=()
for listen in "$store_listen" "$apiserver_listen"; do
  host=${listen%:*}
  host=${host#[}
  host=${host%]}
  case "$host" in
    127.0.0.1 | localhost | 0.0.0.0 | "" | :: | ::1) ;;
    *:* | *[0-9]) sans+=("IP:$host") ;;
    *) sans+=("DNS:$host") ;;
  esac
done
"$root/deploy/lib/certs.sh" "$state/pki" "$(IFS=,; echo "${sans[*]}")"
chmod 700 "$state/pki"
pki=$state/pki
store_tls=(--cert-file "$pki/store.crt" --key-file "$pki/store.key"
  --trusted-ca-file "$pki/ca.crt" --client-cert-auth)

if [ "$store_kind" = mkube ]; then
  if [ -d "$state/etcd" ] && ! running "$state/run/store.pid" mkube-store; then
    echo "up.sh: $state holds an etcd cluster's data; run with --store etcd, or down.sh --purge first" >&2
    exit 2
  fi
  start store "$state/run/store.addr" "$bin/mkube-store" --data-dir "$state/store" \
    --listen "$store_listen" --address-file "$state/run/store.addr" "${store_tls[@]}"
elif running "$state/run/store.pid" etcd; then
  echo "store already running (pid $(cat "$state/run/store.pid"))"
else
  # A one-member etcd; its peer port is the client port + 1. Ready once it answers.
  port=${store_listen##*:}
  host=${store_listen%:*}
  rm -f "$state/run/store.addr.pending"
  start store "$state/run/store.addr.pending" sh -c '
    "$0" --name default --data-dir "$1" --listen-client-urls "https://$2:$3" \
      --advertise-client-urls "https://$2:$3" --listen-peer-urls "http://$2:$4" \
      --initial-advertise-peer-urls "http://$2:$4" --initial-cluster "default=http://$2:$4" \
      --cert-file "$6/store.crt" --key-file "$6/store.key" --trusted-ca-file "$6/ca.crt" \
      --client-cert-auth --log-level warn --logger zap &
    pid=$!
    for _ in $(seq 1 100); do
      if ETCDCTL_API=3 etcdctl --endpoints="https://$2:$3" --cacert "$6/ca.crt" \
        --cert "$6/apiserver-etcd-client.crt" --key "$6/apiserver-etcd-client.key" \
        endpoint health >/dev/null 2>&1; then
        echo "$2:$3" >"$5"; break
      fi
      sleep 0.1
    done
    trap "kill -TERM $pid" TERM INT
    wait $pid' "$(command -v etcd || echo /usr/bin/etcd)" "$state/etcd" "$host" "$port" "$((port + 1))" \
    "$state/run/store.addr.pending" "$pki"
  mv "$state/run/store.addr.pending" "$state/run/store.addr"
fi
store_addr=$(cat "$state/run/store.addr")

# Bearer tokens, one per identity.
if [ "$("$root/deploy/lib/tokens.sh" "$state/pki" "${nodes[@]}")" = added ] &&
  running "$state/run/apiserver.pid" mkube-apiserver; then
  echo "restarting the apiserver for the new nodes' tokens"
  stop_pids 10 "$(cat "$state/run/apiserver.pid")" >/dev/null
fi
start apiserver "$state/run/apiserver.addr" "$bin/mkube-apiserver" \
  --listen "$apiserver_listen" --store-endpoints "https://$store_addr" \
  --etcd-cafile "$pki/ca.crt" --etcd-certfile "$pki/apiserver-etcd-client.crt" \
  --etcd-keyfile "$pki/apiserver-etcd-client.key" \
  --token-file "$state/pki/tokens.csv" --tls-cert-file "$state/pki/apiserver.crt" \
  --tls-private-key-file "$state/pki/apiserver.key" --address-file "$state/run/apiserver.addr" \
  --agent-token-file "$state/pki/agent.token"
apiserver_addr=$(cat "$state/run/apiserver.addr")

# The scheduler: binds pods that name no node.
start scheduler "$state/run/scheduler.ready" "$bin/mkube-scheduler" \
  --apiserver "$apiserver_addr" --ca-file "$state/pki/ca.crt" --token-file "$state/pki/scheduler.token" \
  --ready-file "$state/run/scheduler.ready"

# The controller-manager: Deployments, ReplicaSets and ReplicationControllers become pods.
start controller-manager "$state/run/controller-manager.ready" "$bin/mkube-controller-manager" \
  --apiserver "$apiserver_addr" --ca-file "$state/pki/ca.crt" \
  --token-file "$state/pki/controller-manager.token" --ready-file "$state/run/controller-manager.ready" \
  ${MKUBE_CONTROLLER_MANAGER_FLAGS:-}

# The node agents, pulling from the demo image registry.
"$root/deploy/lib/images.sh" "$state/registry" "$bin"
i=0
for node in "${nodes[@]}"; do
  i=$((i + 1))
  token_file=$state/pki/$node.token
  extra=()
  if [ "$node" = master01 ]; then
    extra=(--node-labels node-role.kubernetes.io/master= \
      --register-with-taints node-role.kubernetes.io/master:NoSchedule)
  fi
  start "agent-$node" "$state/run/agent-$node.addr" "$bin/mkube-agent" \
    --apiserver "$apiserver_addr" --ca-file "$state/pki/ca.crt" --token-file "$token_file" \
    --agent-token-file "$state/pki/agent.token" --node-name "$node" --node-ip "127.0.$block.$i" \
    --listen "127.0.$block.$i:$agent_port" --pod-cidr "127.$block.$i.0/24" --root-dir "$state/nodes/$node" \
    --image-registry "$state/registry" --address-file "$state/run/agent-$node.addr" "${extra[@]}" \
    ${MKUBE_AGENT_FLAGS:-}
done
if [ "$simulated" -gt 0 ]; then
  start agent-simulated "$state/run/agent-simulated.ready" "$bin/mkube-agent" \
    --apiserver "$apiserver_addr" --ca-file "$state/pki/ca.crt" \
    --token-file "$state/pki/simulator.token" --agent-token-file "$state/pki/agent.token" \
    --node-name sim --simulated "$simulated" --simulated-zones 3 \
    --root-dir "$state/nodes/simulated" --ready-file "$state/run/agent-simulated.ready"
fi

# The kubeconfig mkubectl reads by default (~/.mkube/config): the admin's token and the CA.
admin_token=$(cat "$state/pki/admin.token")
umask 077
cat >"$state/config.tmp" <<CONFIG
apiVersion: v1
kind: Config
clusters:
- name: mkube
  cluster:
    server: https://$apiserver_addr
    certificate-authority-data: $(base64 -w0 <"$state/pki/ca.crt")
users:
- name: admin
  user:
    token: $admin_token
contexts:
- name: mkube
  context:
    cluster: mkube
    user: admin
    namespace: default
current-context: mkube
CONFIG
mv "$state/config.tmp" "$state/config"
umask 022

# Ready once every node says so.
want=$(( ${#nodes[@]} + simulated ))
ready=0
for _ in $(seq 1 600); do
  ready=$(MKUBECONFIG=$state/config "$bin/mkubectl" get nodes --no-headers 2>/dev/null |
    awk '$2 == "Ready" || $2 ~ /^Ready,/ {n++} END {print n + 0}')
  [ "$ready" -ge "$want" ] && break
  sleep 0.1
done
if [ "$ready" -lt "$want" ]; then
  echo "up.sh: only $ready of $want nodes are Ready after 60 s (logs in $state/logs)" >&2
  exit 1
fi

agent_list=""
for node in "${nodes[@]}"; do agent_list+="$node $(cat "$state/run/agent-$node.addr"), "; done
agent_list=${agent_list%, }
[ "$simulated" -eq 0 ] || agent_list+="; $simulated simulated nodes sim-0000 ..."
mkubeconfig_hint=""
[ "$state" = "$HOME/.mkube" ] || mkubeconfig_hint="MKUBECONFIG=$state/config "
cat <<MSG
mkube is up (state in $state, logs in $state/logs).
  store ($store_kind, etcd v3 API, TLS): $store_addr   client certificates: $pki
  apiserver (gRPC, TLS): $apiserver_addr   kubeconfig: $state/config
  scheduler: $(cat "$state/run/scheduler.ready")
  controller-manager: $(cat "$state/run/controller-manager.ready")
  agents: $agent_list (all Ready)
  images: $state/registry (busybox, nginx, soscscs/myapp:v1, soscscs/myapp:v2)
Try:
  export PATH=$bin:\$PATH
  ${mkubeconfig_hint}mkubectl get nodes
  ${mkubeconfig_hint}mkubectl apply -f deploy/examples/myapp-pod.yaml
  ${mkubeconfig_hint}mkubectl get pods -o wide
Stop it with: ./deploy/down.sh$( [ "$state" = "$HOME/.mkube" ] || echo " --state-dir $state")
MSG
