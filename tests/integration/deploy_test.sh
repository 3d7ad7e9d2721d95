#!/usr/bin/env bash
# deploy/up.sh starts a working cluster in a given state dir and deploy/down.sh stops it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
state=$(mktemp -d)
trap '"$root/deploy/down.sh" --state-dir "$state" --purge >/dev/null 2>&1 || true; rm -rf "$state"' EXIT

out=$("$root/deploy/up.sh" --state-dir "$state" --store-listen 127.0.0.1:0 --apiserver-listen 127.0.0.1:0)
echo "$out"
addr=$(cat "$state/run/store.addr")
grep -q "store (etcd v3 API): $addr" <<<"$out"
pid=$(cat "$state/run/store.pid")
kill -0 "$pid"
api_pid=$(cat "$state/run/apiserver.pid")
kill -0 "$api_pid"
grep -q "apiserver (gRPC, TLS): $(cat "$state/run/apiserver.addr")" <<<"$out"
[ "$(stat -c %a "$state/pki/tokens.csv")" = 600 ]

export ETCDCTL_API=3
etcdctl --endpoints="$addr" put deploy-test ok >/dev/null
[ "$(etcdctl --endpoints="$addr" get deploy-test --print-value-only)" = ok ]

# A second up.sh leaves the running store alone.
again=$("$root/deploy/up.sh" --state-dir "$state" --store-listen 127.0.0.1:0 --apiserver-listen 127.0.0.1:0)
grep -q "store already running (pid $pid)" <<<"$again"

"$root/deploy/down.sh" --state-dir "$state"
for p in "$pid" "$api_pid"; do
  if kill -0 "$p" 2>/dev/null; then echo "pid $p still running after down.sh" >&2; exit 1; fi
done

# Data survives a restart in the same state dir.
"$root/deploy/up.sh" --state-dir "$state" --store-listen 127.0.0.1:0 --apiserver-listen 127.0.0.1:0 >/dev/null
addr=$(cat "$state/run/store.addr")
[ "$(etcdctl --endpoints="$addr" get deploy-test --print-value-only)" = ok ]
"$root/deploy/down.sh" --state-dir "$state" --purge
[ ! -d "$state" ]
echo "1 passed, 0 failed"
