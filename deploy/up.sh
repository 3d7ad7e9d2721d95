#!/usr/bin/env bash
# Installs what is missing, builds, and starts a local mkube cluster in the background.
#   ./deploy/up.sh [--state-dir DIR] [--store-listen HOST:PORT] [--apiserver-listen HOST:PORT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${MKUBE_STATE_DIR:-$HOME/.mkube}
store_listen=127.0.0.1:2379
apiserver_listen=127.0.0.1:6443
while [ $# -gt 0 ]; do
  case "$1" in
    --state-dir) state=$2; shift 2 ;;
    --state-dir=*) state=${1#*=}; shift ;;
    --store-listen) store_listen=$2; shift 2 ;;
    --store-listen=*) store_listen=${1#*=}; shift ;;
    --apiserver-listen) apiserver_listen=$2; shift 2 ;;
    --apiserver-listen=*) apiserver_listen=${1#*=}; shift ;;
    -h|--help) sed -n '2,3p' "$0"; exit 0 ;;
    *) echo "up.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

"$root/deploy/deps.sh"
"$root/deploy/build.sh" >/dev/null
bin=${MKUBE_BUILD_DIR:-$root/build}/bin
mkdir -p "$state/run" "$state/logs" "$state/store"
state=$(cd "$state" && pwd)

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# start NAME ADDRESS_FILE COMMAND...: starts a daemon unless it already runs, waits for its address.
start() {
  local name=$1 addr_file=$2; shift 2
  local pid_file=$state/run/$name.pid
  if running "$pid_file"; then
    echo "$name already running (pid $(cat "$pid_file"))"
    return
  fi
  rm -f "$addr_file"
  nohup "$@" >>"$state/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$pid_file"
  for _ in $(seq 1 100); do
    [ -s "$addr_file" ] && return
    if ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
      echo "$name failed to start; last lines of $state/logs/$name.log:" >&2
      tail -n 20 "$state/logs/$name.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "$name did not report its address within 10 s (see $state/logs/$name.log)" >&2
  exit 1
}

start store "$state/run/store.addr" "$bin/mkube-store" --data-dir "$state/store" \
  --listen "$store_listen" --address-file "$state/run/store.addr"
store_addr=$(cat "$state/run/store.addr")

# Credentials: a CA and serving certificate, and one bearer token per identity.
"$root/deploy/lib/certs.sh" "$state/pki"
if [ ! -f "$state/pki/tokens.csv" ]; then
  umask 077
  token() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
  {
    echo "$(token),admin,admin,\"system:masters\""
    echo "$(token),system:kube-scheduler,system:kube-scheduler,"
    echo "$(token),system:kube-controller-manager,system:kube-controller-manager,"
    for node in master01 node01 node02; do
      echo "$(token),system:node:$node,system:node:$node,\"system:nodes\""
    done
  } >"$state/pki/tokens.csv"
  umask 022
fi
start apiserver "$state/run/apiserver.addr" "$bin/mkube-apiserver" \
  --listen "$apiserver_listen" --store-endpoints "$store_addr" \
  --token-file "$state/pki/tokens.csv" --tls-cert-file "$state/pki/apiserver.crt" \
  --tls-private-key-file "$state/pki/apiserver.key" --address-file "$state/run/apiserver.addr"
apiserver_addr=$(cat "$state/run/apiserver.addr")

cat <<MSG
mkube is up (state in $state, logs in $state/logs).
  store (etcd v3 API): $store_addr
  apiserver (gRPC, TLS): $apiserver_addr   CA: $state/pki/ca.crt   tokens: $state/pki/tokens.csv
Try:
  ETCDCTL_API=3 etcdctl --endpoints=$store_addr put hello world
  ETCDCTL_API=3 etcdctl --endpoints=$store_addr get hello
Stop it with: ./deploy/down.sh$( [ "$state" = "$HOME/.mkube" ] || echo " --state-dir $state")
MSG
