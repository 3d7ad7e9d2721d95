#!/usr/bin/env bash
# Installs what is missing, builds, and starts a local mkube cluster in the background.
#   ./deploy/up.sh [--nodes N] [--simulated-nodes N] [--state-dir DIR] [--store mkube|etcd]
#                  [--store-listen HOST:PORT] [--apiserver-listen HOST:PORT] [--agent-port PORT]
#                  [--apiserver-http-listen HOST:PORT] [--address-block B]
#                  [--registry [HOST:PORT]]
# Agents: master01 (tainted node-role.kubernetes.io/master:NoSchedule), node01 ... nodeN
# (N=2 by default), each on its own address (127.0.B.1, .2, ...) with pod addresses from
# 127.B.<i>.0/24 (B=1 unless --address-block says otherwise: two clusters on one machine need
# different blocks and ports); --simulated-nodes adds one agent holding that many simulated
# nodes (sim-0000 ...: they run no processes, and report their pods Running at once).
# --registry starts a local image registry (Debian's docker-registry, plain HTTP, on
# 127.0.0.1:5000 unless HOST:PORT is given) that the agents trust, for images of your own:
#   skopeo copy --dest-tls-verify=false docker-archive:app.tar docker://127.0.0.1:5000/app:v1
# then `image: 127.0.0.1:5000/app:v1`. Its data is kept in the state dir's registry-data
# (--registry none: a cluster without it again).
# Every daemon runs under deploy/lib/supervise.sh, which starts it again when it exits (after
# 0.5 s, doubling up to 8 s while it keeps exiting) and says so in its log. The flags above are
# kept in the state dir (run/<flag>): a later up.sh without them runs the cluster as it was
# started, on the ports its daemons bound where it asked for port 0, even after down.sh (which
# keeps them, as it keeps the data); a different value is refused while any of the cluster
# runs (down.sh first), except more --nodes, or --simulated-nodes where there were none.
# Idempotent: what runs is left alone, a daemon that died with its supervisor is started again.
# Returns once every node is Ready.
# MKUBE_CONTROLLER_MANAGER_FLAGS and MKUBE_AGENT_FLAGS add flags to those daemons (tests use
# them for short node grace periods).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${MKUBE_STATE_DIR:-$HOME/.mkube}
# The cluster's shape, as given (empty when not given).
store_listen='' apiserver_listen='' apiserver_http_listen='' store_kind='' agent_port='' workers='' simulated='' block=''
registry=''
while [ $# -gt 0 ]; do
  case "$1" in
    --state-dir) state=$2; shift 2 ;;
    --state-dir=*) state=${1#*=}; shift ;;
    --store-listen) store_listen=$2; shift 2 ;;
    --store-listen=*) store_listen=${1#*=}; shift ;;
    --apiserver-listen) apiserver_listen=$2; shift 2 ;;
    --apiserver-listen=*) apiserver_listen=${1#*=}; shift ;;
    --apiserver-http-listen) apiserver_http_listen=$2; shift 2 ;;
    --apiserver-http-listen=*) apiserver_http_listen=${1#*=}; shift ;;
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
    --registry=*) registry=${1#*=}; shift ;;
    --registry)
      if [ $# -gt 1 ] && [[ "$2" != -* ]]; then registry=$2; shift 2; else registry=127.0.0.1:5000; shift; fi ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "up.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
source "$root/deploy/lib/proc.sh"
source "$root/deploy/lib/registry.sh"
[ ! -d "$state" ] || state=$(cd "$state" && pwd)

# valid VAR FLAG: VAR (a flag's value; empty is let through) is one the flag takes; numbers are
# made plain (010 is 10) so that they compare with the recorded ones.
valid() {
  local v=${!1} what
  [ -n "$v" ] || return 0
  case "$2" in
    store) [[ "$v" =~ ^(mkube|etcd)$ ]] || what="mkube or etcd" ;;
    nodes) [[ "$v" =~ ^[0-9]{1,3}$ ]] && [ "$((10#$v))" -le 250 ] ||
      what="a number from 0 to 250" ;;
    simulated-nodes) [[ "$v" =~ ^[0-9]{1,9}$ ]] || what="a number" ;;
    address-block)
      [[ "$v" =~ ^[0-9]{1,3}$ ]] && [ "$((10#$v))" -ge 1 ] && [ "$((10#$v))" -le 254 ] ||
        what="a number from 1 to 254" ;;
    agent-port) [[ "$v" =~ ^[0-9]{1,5}$ ]] && [ "$((10#$v))" -le 65535 ] || what="a port number" ;;
    *-listen) [[ "$v" =~ ^.+:[0-9]{1,5}$ ]] || what="HOST:PORT" ;;
    registry) [[ "$v" == none || "$v" =~ ^[^:/]+:[0-9]{1,5}$ && ! "$v" =~ :0+$ ]] ||
      what="HOST:PORT with a port (not 0), or none" ;;
  esac
  if [ -n "${what:-}" ]; then
    echo "up.sh: --$2 must be $what, not '$v'" >&2
    exit 2
  fi
  [[ ! "$v" =~ ^[0-9]+$ ]] || printf -v "$1" %d "$((10#$v))"
}

# Whether any of this cluster's processes (a daemon or a supervisor) runs: each one's command
# line names the state dir.
cluster_runs=0
for f in "$state"/run/*.pid "$state"/run/supervisors/*.pid; do
  if [ -f "$f" ] && alive "$(cat "$f")" "$state"; then
    cluster_runs=1
    break
  fi
done

# shape VAR FLAG DEFAULT: VAR becomes what this cluster runs with: the flag as given, else as
# recorded in the state dir when the cluster was started, else DEFAULT. What runs keeps its
# flags, so another value than the recorded one needs down.sh first; a cluster may grow, though.
shape() {
  local var=$1 flag=$2 default=$3 given=${!1} recorded=''
  [ ! -f "$state/run/$flag" ] || recorded=$(<"$state/run/$flag")
  if [ -z "$given" ]; then
    printf -v "$var" %s "${recorded:-$default}"
    return 0
  fi
  [ -n "$recorded" ] && [ "$given" != "$recorded" ] && [ "$cluster_runs" = 1 ] || return 0
  case "$flag" in
    nodes) [ "$given" -lt "$recorded" ] || return 0 ;;
    simulated-nodes) [ "$recorded" != 0 ] || return 0 ;;
  esac
  echo "up.sh: this cluster runs with --$flag $recorded, not $given; stop it with down.sh first" \
    "(which keeps the data)" >&2
  exit 2
}
flags=(store store_kind mkube  nodes workers 2  simulated-nodes simulated 0
  address-block block 1  store-listen store_listen 127.0.0.1:2379
  apiserver-listen apiserver_listen 127.0.0.1:6443  agent-port agent_port 10250
  apiserver-http-listen apiserver_http_listen 127.0.0.1:6444  registry registry none)
for ((f = 0; f < ${#flags[@]}; f += 3)); do
  valid "${flags[f + 1]}" "${flags[f]}"
  shape "${flags[f + 1]}" "${flags[f]}" "${flags[f + 2]}"
  # What was recorded is checked as what is given is.
  valid "${flags[f + 1]}" "${flags[f]}"
done
if [ "$store_kind" = etcd ] && [[ "$store_listen" == *:0 ]]; then
  echo "up.sh: --store etcd needs a port in --store-listen (its peer port is the next), not 0" >&2
  exit 2
fi
nodes=(master01)
for i in $(seq 1 "$workers"); do nodes+=("$(printf 'node%02d' "$i")"); done

"$root/deploy/deps.sh"
# Only what the cluster runs is built (./deploy/test.sh builds the rest); the build's progress
# goes to stderr, stdout being the cluster's.
"$root/deploy/build.sh" mkube-store mkube-apiserver mkube-controller-manager mkube-scheduler \
  mkube-agent mkube-monitor mkubectl mkube-demo-images >&2
bin=${MKUBE_BUILD_DIR:-$root/build}/bin
mkdir -p "$state/run/supervisors" "$state/logs" "$state/store"
state=$(cd "$state" && pwd)
# The cluster's keys, tokens and data: its owner's alone (pods run as other users).
chmod 700 "$state"
for ((f = 0; f < ${#flags[@]}; f += 3)); do
  echo "${!flags[f + 1]}" >"$state/run/${flags[f]}.tmp"
  mv -f "$state/run/${flags[f]}.tmp" "$state/run/${flags[f]}"
done

# running PID_FILE WORD: the recorded process is alive (not a zombie) and still the program
# whose command line has WORD.
running() { [ -f "$1" ] && alive "$(cat "$1")" "$2"; }

# listen_on LISTEN ADDRESS_FILE: where a daemon is to listen: LISTEN, except that on port 0, when
# the cluster ran as up.sh began and the daemon's address file names the port it bound, that
# port: those still running dial it.
listen_on() {
  local addr
  if [[ "$1" == *:0 ]] && [ "$cluster_runs" = 1 ] && [ -s "$2" ]; then
    addr=$(<"$2")
    echo "${1%:0}:${addr##*:}"
  else
    echo "$1"
  fi
}

# serves READY: a daemon serves (see start).
serves() { if [[ "$1" == /* ]]; then [ -s "$1" ]; else "$1"; fi; }

# start NAME READY [--listen-file FILE] COMMAND...: starts a daemon under its supervisor, unless
# that runs, and waits until it serves: READY is the file it writes then (a path), or a command
# that succeeds then. A daemon that runs without its supervisor (killed) is adopted by a new one.
# --listen-file: see deploy/lib/supervise.sh.
start() {
  local name=$1 ready=$2
  shift 2
  local pid_file=$state/run/$name.pid sup_file=$state/run/supervisors/$name.pid
  local log=$state/logs/$name.log sup pid first='' options=()
  if [ "$1" = --listen-file ]; then
    options=(--listen-file "$2")
    shift 2
  fi
  sup=$(supervisor_of "$state" "$name")
  if [ -n "$sup" ]; then
    if running "$pid_file" "$1"; then
      echo "$name already running (pid $(cat "$pid_file"), supervisor $sup)"
    else
      echo "$name is being restarted by its supervisor (pid $sup; see $log)"
    fi
    return 0
  fi
  if running "$pid_file" "$1"; then
    pid=$(cat "$pid_file")
    nohup "$root/deploy/lib/supervise.sh" "$name" "$pid_file" --adopt "$pid" "${options[@]}" \
      -- "$@" >>"$log" 2>&1 </dev/null &
    echo $! >"$sup_file"
    echo "$name already running (pid $pid, supervisor $! started for it)"
    return 0
  fi
  rm -f "$pid_file"
  [[ "$ready" != /* ]] || rm -f "$ready"
  nohup "$root/deploy/lib/supervise.sh" "$name" "$pid_file" "${options[@]}" -- "$@" \
    >>"$log" 2>&1 </dev/null &
  sup=$!
  echo "$sup" >"$sup_file"
  local deadline=$((SECONDS + 11))
  while [ $SECONDS -lt $deadline ]; do
    [ -n "$first" ] || [ ! -s "$pid_file" ] || first=$(cat "$pid_file")
    if [ -n "$first" ]; then
      ! serves "$ready" || return 0
      alive "$first" || break
    else
      alive "$sup" || break
    fi
    sleep 0.1
  done
  if [ -n "$first" ] && alive "$first"; then
    echo "$name did not report that it serves within 10 s (see $log)" >&2
    exit 1
  fi
  # It exited before it served: not something to start again and again.
  stop_supervised "$state" "$name"
  echo "$name failed to start; last lines of $log:" >&2
  tail -n 20 "$log" >&2
  exit 1
}

# Credentials: a CA, serving certificates for the apiserver and the store, and the client
# certificate the apiserver shows the store (which serves TLS and asks every client for one).
# Names beyond 127.0.0.1 and localhost: a listen address on another of this host's addresses
# (taken when the certificates are first made).
sans=()
for listen in "$store_listen" "$apiserver_listen" "$apiserver_http_listen"; do
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
  start store "$state/run/store.addr" --listen-file "$state/run/store.addr" "$bin/mkube-store" \
    --data-dir "$state/store" --listen "$(listen_on "$store_listen" "$state/run/store.addr")" \
    --address-file "$state/run/store.addr" "${store_tls[@]}" \
    --metrics-listen 127.0.0.1:0 --metrics-address-file "$state/run/store.metrics"
else
  # A one-member etcd; its peer port is the client port + 1. It serves once it answers.
  port=${store_listen##*:}
  host=${store_listen%:*}
  etcd_serves() {
    ETCDCTL_API=3 etcdctl --endpoints="https://$store_listen" --cacert "$pki/ca.crt" \
      --cert "$pki/apiserver-etcd-client.crt" --key "$pki/apiserver-etcd-client.key" \
      --dial-timeout 1s --command-timeout 2s endpoint health >/dev/null 2>&1
  }
  start store etcd_serves "$(command -v etcd || echo /usr/bin/etcd)" --name default \
    --data-dir "$state/etcd" --listen-client-urls "https://$host:$port" \
    --advertise-client-urls "https://$host:$port" --listen-peer-urls "http://$host:$((port + 1))" \
    --initial-advertise-peer-urls "http://$host:$((port + 1))" \
    --initial-cluster "default=http://$host:$((port + 1))" \
    --cert-file "$pki/store.crt" --key-file "$pki/store.key" --trusted-ca-file "$pki/ca.crt" \
    --client-cert-auth --log-level warn --logger zap
  echo "$store_listen" >"$state/run/store.addr"
fi
store_addr=$(cat "$state/run/store.addr")

# Bearer tokens, one per identity.
if [ "$("$root/deploy/lib/tokens.sh" "$state/pki" "${nodes[@]}")" = added ] &&
  running "$state/run/apiserver.pid" mkube-apiserver; then
  echo "restarting the apiserver for the new nodes' tokens"
  stop_supervised "$state" apiserver
fi
start apiserver "$state/run/apiserver.addr" --listen-file "$state/run/apiserver.addr" \
  "$bin/mkube-apiserver" --listen "$(listen_on "$apiserver_listen" "$state/run/apiserver.addr")" \
  --store-endpoints "https://$store_addr" \
  --etcd-cafile "$pki/ca.crt" --etcd-certfile "$pki/apiserver-etcd-client.crt" \
  --etcd-keyfile "$pki/apiserver-etcd-client.key" \
  --token-file "$state/pki/tokens.csv" --tls-cert-file "$state/pki/apiserver.crt" \
  --tls-private-key-file "$state/pki/apiserver.key" --address-file "$state/run/apiserver.addr" \
  --agent-client-certificate "$pki/apiserver-agent-client.crt" \
  --agent-client-key "$pki/apiserver-agent-client.key" --agent-certificate-authority "$pki/ca.crt" \
  --http-listen "$(listen_on "$apiserver_http_listen" "$state/run/apiserver-http.addr")" \
  --http-address-file "$state/run/apiserver-http.addr"
apiserver_addr=$(cat "$state/run/apiserver.addr")
apiserver_http_addr=$(cat "$state/run/apiserver-http.addr")

# The leaders run under a name of their own in their Lease, the same at each start: a daemon
# its supervisor starts again (after the last one exited, so two never lead at once) takes the
# Lease back at once instead of waiting out the 15 s a killed stranger's lease would hold it.
leader_host=$(hostname)

# The scheduler: binds pods that name no node.
start scheduler "$state/run/scheduler.ready" "$bin/mkube-scheduler" \
  --apiserver "$apiserver_addr" --ca-file "$state/pki/ca.crt" --token-file "$state/pki/scheduler.token" \
  --ready-file "$state/run/scheduler.ready" --identity "${leader_host}_scheduler" \
  --metrics-listen 127.0.0.1:0 --metrics-address-file "$state/run/scheduler.metrics"

# The controller-manager: Deployments, ReplicaSets and ReplicationControllers become pods.
start controller-manager "$state/run/controller-manager.ready" "$bin/mkube-controller-manager" \
  --apiserver "$apiserver_addr" --ca-file "$state/pki/ca.crt" \
  --token-file "$state/pki/controller-manager.token" --ready-file "$state/run/controller-manager.ready" \
  --identity "${leader_host}_controller-manager" \
  --metrics-listen 127.0.0.1:0 --metrics-address-file "$state/run/controller-manager.metrics" \
  ${MKUBE_CONTROLLER_MANAGER_FLAGS:-}

# The local image registry (--registry), which the agents speak plain HTTP to.
registry_flags=()
if [ "$registry" != none ]; then
  command -v docker-registry >/dev/null ||
    { echo "up.sh: --registry needs docker-registry (deploy/deps.sh installs it)" >&2; exit 1; }
  registry_config "$state/registry.yml" "$registry" "$state/registry-data"
  registry_ready() { registry_answers "$registry"; }
  start registry registry_ready "$(command -v docker-registry)" serve "$state/registry.yml"
  registry_flags=(--insecure-registry "$registry")
fi

# The node agents, holding the demo images (OCI, made by the build) from the start.
demo_images=${bin%/bin}/images/demo.tar
[ -s "$demo_images" ] || { echo "up.sh: the build made no demo images ($demo_images): is busybox" \
  "installed? (deploy/deps.sh installs busybox-static)" >&2; exit 1; }
i=0
for node in "${nodes[@]}"; do
  i=$((i + 1))
  token_file=$state/pki/$node.token
  extra=()
  if [ "$node" = master01 ]; then
    extra=(--node-labels node-role.kubernetes.io/master= \
      --register-with-taints node-role.kubernetes.io/master:NoSchedule)
  fi
  # The agent serves TLS for its node's name and address; its key is made where it runs.
  node_pki=$state/pki/nodes/$node
  "$root/deploy/lib/agent-cert.sh" request "$node_pki"
  "$root/deploy/lib/agent-cert.sh" sign "$pki" "$node_pki/agent.csr" "$node" "127.0.$block.$i" \
    "$node_pki/agent.crt"
  addr_file=$state/run/agent-$node.addr
  start "agent-$node" "$addr_file" --listen-file "$addr_file" "$bin/mkube-agent" \
    --apiserver "$apiserver_addr" --ca-file "$state/pki/ca.crt" --token-file "$token_file" \
    --tls-cert-file "$node_pki/agent.crt" --tls-private-key-file "$node_pki/agent.key" \
    --client-ca-file "$pki/ca.crt" --node-name "$node" --node-ip "127.0.$block.$i" \
    --listen "$(listen_on "127.0.$block.$i:$agent_port" "$addr_file")" \
    --pod-cidr "127.$block.$i.0/24" --root-dir "$state/nodes/$node" \
    --image-archive "$demo_images" --address-file "$addr_file" "${extra[@]}" "${registry_flags[@]}" \
    --metrics-listen "127.0.$block.$i:0" --metrics-address-file "$state/run/agent-$node.metrics" \
    ${MKUBE_AGENT_FLAGS:-}
done
if [ "$simulated" -gt 0 ]; then
  start agent-simulated "$state/run/agent-simulated.ready" "$bin/mkube-agent" \
    --apiserver "$apiserver_addr" --ca-file "$state/pki/ca.crt" \
    --token-file "$state/pki/simulator.token" \
    --node-name sim --simulated "$simulated" --simulated-zones 3 \
    --root-dir "$state/nodes/simulated" --ready-file "$state/run/agent-simulated.ready"
fi

# The kubeconfig mkubectl reads by default (~/.mkube/config), and kubectl with KUBECONFIG set
# to it: the admin's token and the CA. Its server is the Kubernetes HTTP API; mkubectl finds
# the gRPC API beside it in the mkube.io/grpc extension.
admin_token=$(cat "$state/pki/admin.token")
umask 077
cat >"$state/config.tmp" <<CONFIG
apiVersion: v1
kind: Config
clusters:
- name: mkube
  cluster:
    server: https://$apiserver_http_addr
    certificate-authority-data: $(base64 -w0 <"$state/pki/ca.crt")
    extensions:
    - name: mkube.io/grpc
      extension:
        server: $apiserver_addr
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
# A listing that fails (the apiserver busy, or restarted by its supervisor) is asked again
# until the deadline; the last error is said if the nodes never come.
ready=0
listed=$state/run/nodes.txt
deadline=$((SECONDS + 60))
while :; do
  if MKUBECONFIG=$state/config "$bin/mkubectl" get nodes --no-headers >"$listed" 2>&1; then
    ready=$(awk '$2 == "Ready" || $2 ~ /^Ready,/ {n++} END {print n + 0}' "$listed")
  fi
  [ "$ready" -lt "$want" ] || break
  if [ $SECONDS -ge $deadline ]; then
    echo "up.sh: only $ready of $want nodes are Ready after 60 s (logs in $state/logs);" \
      "the last listing said:" >&2
    tail -n 20 "$listed" >&2
    exit 1
  fi
  sleep 0.1
done
rm -f "$listed"

agent_list=""
for node in "${nodes[@]}"; do
  agent_list+="$node $(cat "$state/run/agent-$node.addr" 2>/dev/null || echo starting), "
done
agent_list=${agent_list%, }
[ "$simulated" -eq 0 ] || agent_list+="; $simulated simulated nodes sim-0000 ..."
metrics_list="apiserver https://$apiserver_http_addr (with a token)"
for d in store scheduler controller-manager "${nodes[@]/#/agent-}"; do
  metrics_list+=", $d http://$(cat "$state/run/$d.metrics" 2>/dev/null || echo starting)"
done
mkubeconfig_hint=""
[ "$state" = "$HOME/.mkube" ] || mkubeconfig_hint="MKUBECONFIG=$state/config "
cat <<MSG
mkube is up (state in $state, logs in $state/logs).
  store ($store_kind, etcd v3 API, TLS): $store_addr   client certificates: $pki
  apiserver: Kubernetes API https://$apiserver_http_addr (kubectl; /healthz, /readyz, /metrics),
             gRPC $apiserver_addr (mkubectl and the daemons)   kubeconfig: $state/config
  scheduler: $(cat "$state/run/scheduler.ready" 2>/dev/null || echo starting)
  controller-manager: $(cat "$state/run/controller-manager.ready" 2>/dev/null || echo starting)
  agents: $agent_list (all Ready)
  /metrics, /healthz, /readyz: $metrics_list
  each daemon is started again when it exits (pids: $state/run, supervisors: run/supervisors)
  images: busybox, nginx, soscscs/myapp:v1, soscscs/myapp:v2 (OCI images, from $demo_images)$(
  [ "$registry" = none ] || printf '\n  registry: http://%s (plain HTTP; push with skopeo copy --dest-tls-verify=false ... docker://%s/NAME:TAG, run image: %s/NAME:TAG)' "$registry" "$registry" "$registry")
Try:
  export PATH=$bin:\$PATH
  ${mkubeconfig_hint}mkubectl get nodes
  ${mkubeconfig_hint}mkubectl apply -f deploy/examples/myapp-pod.yaml
  ${mkubeconfig_hint}mkubectl get pods -o wide
  KUBECONFIG=$state/config kubectl get nodes
Stop it with: ./deploy/down.sh$( [ "$state" = "$HOME/.mkube" ] || echo " --state-dir $state")
MSG
