#!/usr/bin/env bash
# The real kubectl (1.32, through its dispatcher) drives a cluster started by up.sh, with the
# kubeconfig up.sh writes, through the apiserver's Kubernetes HTTP API: discovery, Tables,
# HTTP/2, labels, taints, cordon, apply (client-side with server validation, and server-side),
# deployments, scale, set image, rollout (status, undo, history), describe, explain, top, logs,
# exec, attach, port-forward, drain, reviews, watch, errors — with the outcomes mkubectl sees
# over gRPC; then python3-kubernetes, and a scrape of every daemon's /metrics.
# Without kubectl on PATH the test fails: it does not skip.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v kubectl >/dev/null || { echo "kubectl_test.sh: kubectl is not on PATH" >&2; exit 1; }
state=$(mktemp -d)
trap 'echo "kubectl_test.sh: failed at line $LINENO; the apiserver said:" >&2
  tail -n 40 "$state/logs/apiserver.log" >&2 || true' ERR
# Addresses apart from a cluster the user may be running (block 1) and from the C++ tests'
# clusters (20-219).
block=$((220 + $$ % 35))
trap '"$root/deploy/down.sh" --state-dir "$state" --purge >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
out=$("$root/deploy/up.sh" --state-dir "$state" --store-listen 127.0.0.1:0 \
  --apiserver-listen 127.0.0.1:0 --apiserver-http-listen 127.0.0.1:0 --agent-port 0 \
  --address-block "$block" --nodes 2 2>&1) || { echo "$out" >&2; echo "up.sh failed" >&2; exit 1; }
mkubectl="${MKUBE_BUILD_DIR:-$root/build}/bin/mkubectl"
ctl() { MKUBECONFIG=$state/config "$mkubectl" "$@"; }
# Each kubectl run discovers afresh (its own cache dir), as a first run does.
k() { KUBECONFIG=$state/config kubectl --cache-dir "$state/kcache" --request-timeout 20s "$@"; }
passed=0
pass() { passed=$((passed + 1)); echo "ok $passed: $*"; }
fail() {
  echo "FAILED: $*" >&2
  ctl get pods -o wide >&2 || true
  echo "--- the apiserver's log:" >&2
  tail -n 30 "$state/logs/apiserver.log" >&2 || true
  exit 1
}
source "$root/tests/lib/checks.sh"

server=$(awk '/server:/ {print $2; exit}' "$state/config")
[[ "$server" == https://127.0.0.1:* ]] || fail "the kubeconfig's server is $server"
shows '"minor": "32"' k version -o json
shows '^node01 *Ready *<none>' k get nodes
shows '^NAME *STATUS *ROLES *AGE *VERSION$' k get nodes
shows 'kubernetes.io/hostname=node02' k get nodes --show-labels
# The same kubeconfig serves mkubectl (over gRPC).
shows '^node01 *Ready' ctl get nodes
pass "one kubeconfig: kubectl get nodes (Table columns, --show-labels) and mkubectl"

# kubectl (Go) chooses HTTP/2 in the TLS handshake and gets it: its requests and answers are
# frames on one connection. curl says which protocol it was served.
out=$(GODEBUG=http2debug=1 k get nodes 2>&1) || fail "kubectl over HTTP/2: $out"
grep -q 'http2: Transport creating client conn' <<<"$out" &&
  grep -q 'http2: Transport received SETTINGS len=.*MAX_CONCURRENT_STREAMS=1000' <<<"$out" &&
  grep -q '^node01 *Ready' <<<"$out" ||
  fail "kubectl did not speak HTTP/2: $(grep -m5 http2 <<<"$out")"
token=$(awk '/token:/ {print $2; exit}' "$state/config")
curl_h2() { curl -sS --http2 --cacert "$state/pki/ca.crt" -H "Authorization: Bearer $token" "$@"; }
[ "$(curl_h2 -o /dev/null -w '%{http_version} %{http_code}' "$server/api/v1/nodes")" = "2 200" ] ||
  fail "curl --http2: $(curl_h2 -v -o /dev/null "$server/api/v1/nodes" 2>&1 | tail -5)"
[ "$(curl -sS --http1.1 --cacert "$state/pki/ca.crt" -H "Authorization: Bearer $token" \
  -o /dev/null -w '%{http_version} %{http_code}' "$server/api/v1/nodes")" = "1.1 200" ] ||
  fail "curl --http1.1"
pass "HTTP/2 for the clients that offer it (kubectl, curl --http2), HTTP/1.1 for the others"

says 'node/node01 labeled' k label nodes node01 abc=aaa
shows '^node01 ' k get nodes -l abc=aaa
[ "$(k get nodes -l abc=aaa -o name)" = node/node01 ] || fail "-l abc=aaa selects more"
says 'node/node01 labeled' k label nodes node01 abc=ccc --overwrite
[ "$(ctl get node node01 -o jsonpath='{.metadata.labels.abc}')" = ccc ] || fail "overwrite"
says 'node/node01 unlabeled' k label nodes node01 abc-
says 'node/node01 annotated' k annotate nodes node01 note=hello
[ "$(ctl get node node01 -o jsonpath='{.metadata.annotations.note}')" = hello ] || fail "annotate"
pass "label (add, overwrite, remove) and annotate, seen by mkubectl"

says 'node/node01 tainted' k taint node node01 key1=value1:NoSchedule
says 'node/node01 tainted' k taint node node01 key2=v2:NoExecute
[ "$(ctl get node node01 -o jsonpath='{range .spec.taints[*]}{.key}{" "}{end}')" = "key2 key1 " ] ||
  fail "taints: $(ctl get node node01 -o jsonpath='{.spec.taints}')"
says 'node/node01 untainted' k taint node node01 key1:NoSchedule-
[ "$(ctl get node node01 -o jsonpath='{range .spec.taints[*]}{.key}{" "}{end}')" = "key2 " ] ||
  fail "taint removal kept: $(ctl get node node01 -o jsonpath='{.spec.taints}')"
says 'node/node01 untainted' k taint node node01 key2:NoExecute-
[ -z "$(ctl get node node01 -o jsonpath='{.spec.taints}')" ] || fail "taints left"
pass "taint and untaint: spec.taints is an atomic list in the strategic merge patch"

says 'node/node02 cordoned' k cordon node02
shows '^node02 *Ready,SchedulingDisabled' k get nodes
shows '^node02 *Ready,SchedulingDisabled' ctl get nodes
says 'node/node02 uncordoned' k uncordon node02
shows '^node02 *Ready *<none>' k get nodes
pass "cordon and uncordon"

cat >"$state/web.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: web
    image: soscscs/myapp:v1
    ports:
    - containerPort: 80
YAML
says 'pod/web created' k apply -f "$state/web.yaml"
says 'pod/web unchanged' k apply -f "$state/web.yaml"
sed -i 's/    app: web/    app: web\n    tier: fe/' "$state/web.yaml"
says 'pod/web configured' k apply -f "$state/web.yaml"
[ "$(ctl get pod web -o jsonpath='{.metadata.labels.tier}')" = fe ] || fail "apply's patch"
until_ok 60 shows '^web *1/1 *Running' k get pods
shows '^NAME *READY *STATUS *RESTARTS *AGE *IP *NODE' k get pods -o wide
sed 's/spec:/spec:\n  foo: bar/' "$state/web.yaml" >"$state/bad.yaml"
out=$(k apply -f "$state/bad.yaml" 2>&1) && fail "an unknown field was taken"
grep -q 'unknown field "spec.foo"' <<<"$out" || fail "unknown field refused as: $out"
out=$(k apply --validate=warn -f "$state/bad.yaml" 2>&1) || fail "--validate=warn refused: $out"
grep -qF 'Warning: unknown field "spec.foo"' <<<"$out" || fail "--validate=warn said: $out"
out=$(k patch pod web --type=json \
  -p '[{"op":"add","path":"/metadata/labels/jp","value":"yes"},{"op":"add","path":"/spec/foo","value":1}]' 2>&1) ||
  fail "a json patch with an unknown field: $out"
grep -qF 'Warning: unknown field "spec.foo"' <<<"$out" || fail "the json patch said: $out"
[ "$(ctl get pod web -o jsonpath='{.metadata.labels.jp}')" = yes ] || fail "json patch's known op"
pass "apply and patch: created, unchanged, configured; unknown fields refused (or warned of) by the server"

sed 's/name: web$/name: ssa/' "$state/web.yaml" >"$state/ssa.yaml"
says 'pod/ssa serverside-applied' k apply --server-side -f "$state/ssa.yaml"
says 'pod/ssa serverside-applied' k apply --server-side -f "$state/ssa.yaml"
# A field another manager has set otherwise is a conflict (409) until the applier forces it.
says 'pod/ssa labeled' k label pod ssa tier=be --overwrite
out=$(k apply --server-side -f "$state/ssa.yaml" 2>&1) && fail "applied over another manager's field"
grep -qF 'Apply failed with 1 conflict: conflict with "kubectl-label" using v1: .metadata.labels.tier' \
  <<<"$out" || fail "the conflict said: $out"
[ "$(ctl get pod ssa -o jsonpath='{.metadata.labels.tier}')" = be ] || fail "a conflict wrote"
says 'pod/ssa serverside-applied' k apply --server-side --force-conflicts -f "$state/ssa.yaml"
[ "$(ctl get pod ssa -o jsonpath='{.metadata.labels.tier}')" = fe ] || fail "--force-conflicts"
shows '^    manager: kubectl$' k get pod ssa -o yaml --show-managed-fields
shows '^      f:metadata:$' k get pod ssa -o yaml --show-managed-fields
k get pod ssa -o yaml | grep -q managedFields && fail "managedFields shown unasked"
pass "apply --server-side: creates, applies again, conflicts unless --force-conflicts; managedFields"

out=$(k get pod nonexist 2>&1) && fail "a missing pod was found"
grep -qxF 'Error from server (NotFound): pods "nonexist" not found' <<<"$out" || fail "$out"
shows '^pods  *po  *v1  *true  *Pod$' k api-resources
shows '^deployments  *deploy  *apps/v1  *true  *Deployment$' k api-resources
says 'yes' k auth can-i create pods
shows 'admin' k auth whoami
pass "errors as Status, api-resources, auth can-i and whoami"

says 'deployment.apps/myapp created' k create deployment myapp --image=soscscs/myapp:v1 --replicas=2
shows 'successfully rolled out' k rollout status deployment/myapp --timeout=90s
says 'deployment.apps/myapp scaled' k scale deployment myapp --replicas=3
shows 'successfully rolled out' k rollout status deployment/myapp --timeout=90s
[ "$(ctl get deployment myapp -o jsonpath='{.status.readyReplicas}')" = 3 ] || fail "scale"
says 'deployment.apps/myapp image updated' k set image deployment/myapp myapp=soscscs/myapp:v2
shows 'successfully rolled out' k rollout status deployment/myapp --timeout=90s
[ "$(ctl get deployment myapp -o jsonpath='{.spec.template.spec.containers[0].image}')" = soscscs/myapp:v2 ] ||
  fail "set image"
says 'deployment.apps/myapp rolled back' k rollout undo deployment/myapp
shows 'successfully rolled out' k rollout status deployment/myapp --timeout=90s
[ "$(ctl get deployment myapp -o jsonpath='{.spec.template.spec.containers[0].image}')" = soscscs/myapp:v1 ] ||
  fail "rollout undo"
shows '^3  *<none>$' k rollout history deployment/myapp
pass "create deployment, rollout status, scale, set image, rollout undo and history"

# describe reads the objects and their events; explain reads the OpenAPI schemas; top reads
# metrics.k8s.io (the agents' measures come within their first scrape).
pod=$(ctl get pods -l app=myapp -o name | head -1)
shows '^Controlled By:  *ReplicaSet/myapp-' k describe "$pod"
shows '^    Image:  *soscscs/myapp:v1$' k describe "$pod"
shows '^Taints:  *<none>$' k describe node node02
shows '^  Normal  *ScalingReplicaSet ' k describe deployment myapp
shows '^FIELD: containers <\[\]Container>$' k explain pod.spec.containers
shows '^  tolerations	<\[\]Toleration>$' k explain pod.spec
out=$(k explain pod.spec.nosuchfield 2>&1) && fail "explain of a missing field: $out"
grep -qF 'field "nosuchfield" does not exist' <<<"$out" || fail "explain said: $out"
until_ok 60 shows '^node01  *[0-9]*m  *[0-9]*%  *[0-9]*Mi ' k top nodes
until_ok 60 shows "^${pod#pod/}  *[0-9]*m  *[0-9]*Mi " k top pods
pass "describe (pod, node, deployment), explain, top nodes and pods"

# get -w prints the rows of what changes after its list.
k get pods -w >"$state/watch.out" 2>&1 &
watcher=$!
until_ok 20 grep -q '^web ' "$state/watch.out"
k label pod web watched=yes >/dev/null
second_row() { test "$(grep -c '^web ' "$state/watch.out")" -ge 2; }
for _ in $(seq 1 200); do second_row && break; sleep 0.1; done
second_row || { echo "--- kubectl get pods -w wrote:" >&2; cat "$state/watch.out" >&2; }
until_ok 20 second_row
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true
pass "get -w: the list, then one row per change"

# Streams relayed to the pod's agent: logs (tail, timestamps, limits, since, follow), exec
# over WebSocket (exit codes, stdin, errors), attach, and port-forward (SPDY over WebSocket).
kt() { local secs=$1; shift; KUBECONFIG=$state/config timeout "$secs" kubectl --cache-dir "$state/kcache" "$@"; }
says 'pod/talker created' k run talker --image=busybox -- \
  sh -c 'i=0; while true; do echo line $i; i=$((i+1)); sleep 0.2; done'
says 'pod/counter created' k run counter --image=busybox --restart=Never -- \
  sh -c 'for i in 1 2 3; do echo tick $i; sleep 0.5; done; echo done >&2'
until_ok 60 shows '^talker *1/1 *Running' k get pods
until_ok 20 shows '^line 3$' k logs talker
[[ "$(k logs talker --tail=1)" =~ ^line\ [0-9]+$ ]] || fail "logs --tail=1"
shows '^20[0-9-]*T[0-9:]*\.[0-9]\{9\}Z line 0$' k logs talker --timestamps
[ "$(k logs talker --limit-bytes=6)" = "line 0" ] || fail "logs --limit-bytes"
[ -z "$(k logs talker --since-time=2100-01-01T00:00:00Z)" ] || fail "logs --since-time in the future"
out=$(k logs counter -f) || fail "logs -f: $out"
[ "$out" = "$(printf 'tick 1\ntick 2\ntick 3\ndone')" ] || fail "logs -f ends with the container: $out"
out=$(k logs nosuchpod 2>&1) && fail "logs of a missing pod"
grep -qF '(NotFound): pods "nosuchpod" not found' <<<"$out" || fail "logs: $out"
set +e
out=$(k exec talker -- sh -c 'echo out; echo err >&2; exit 3' 2>&1)
rc=$?
set -e
[ "$rc" = 3 ] || fail "exec's exit code was $rc: $out"
grep -qx out <<<"$out" && grep -qx err <<<"$out" || fail "exec's output: $out"
[ "$(echo hello | k exec -i talker -- cat)" = hello ] || fail "exec -i"
out=$(k exec talker -c nope -- true 2>&1) && fail "exec in a missing container"
grep -qF 'Error from server (BadRequest): container nope is not valid for pod talker' <<<"$out" ||
  fail "exec -c nope: $out"
out=$(kt 3 attach talker 2>/dev/null || true)
[[ "$(head -n 1 <<<"$out")" =~ ^line\ [0-9]+$ ]] || fail "attach: $out"
kt 30 port-forward pod/web :80 >"$state/pf.out" 2>&1 &
forwarder=$!
until_ok 20 grep -q '^Forwarding from 127.0.0.1:' "$state/pf.out"
local_port=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) -> 80$/\1/p' "$state/pf.out")
for _ in 1 2 3; do
  shows 'Hello MyApp' curl -s -m 5 "http://127.0.0.1:$local_port/"
done
kill "$forwarder" 2>/dev/null || true
wait "$forwarder" 2>/dev/null || true
kt 30 port-forward pod/web :81 >"$state/pf81.out" 2>&1 &
forwarder=$!
until_ok 20 grep -q '^Forwarding from 127.0.0.1:' "$state/pf81.out"
local_port=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) -> 81$/\1/p' "$state/pf81.out")
curl -s -m 5 "http://127.0.0.1:$local_port/" && fail "a closed port answered"
wait "$forwarder" 2>/dev/null || true
grep -q 'error forwarding port 81 to pod web: dial tcp .*:81: connect: Connection refused' "$state/pf81.out" ||
  fail "port-forward to a closed port: $(cat "$state/pf81.out")"
k delete pod talker counter --now >/dev/null
pass "logs (tail, timestamps, limit, since, -f), exec (exit code, stdin), attach, port-forward"

out=$(k drain node01 --ignore-daemonsets --delete-emptydir-data --force 2>&1) || fail "drain: $out"
grep -qxF 'node/node01 drained' <<<"$out" || fail "drain said: $out"
[ -z "$(ctl get pods --field-selector spec.nodeName=node01 -o name)" ] || fail "pods left on node01"
shows '^node01 *Ready,SchedulingDisabled' ctl get nodes
says 'node/node01 uncordoned' k uncordon node01
pass "drain evicts node01's pods (policy/v1 eviction) and cordons it"

sed 's/name: web$/name: gone/; s/^spec:/spec:\n  nodeName: node02/' "$state/web.yaml" >"$state/gone.yaml"
says 'pod/gone created' k apply -f "$state/gone.yaml"
until_ok 60 shows '^gone *1/1 *Running' k get pods
# A pod on a node stops gracefully: delete waits for its DELETED event.
says 'pod "gone" deleted' k delete pod gone
out=$(ctl get pod gone 2>&1) && fail "gone is still there"
says 'deployment.apps "myapp" deleted' k delete deployment myapp
pass "delete waits until the object is gone"

# Debian's python3-kubernetes, with the same kubeconfig (the system's python, where Debian
# installs it).
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null ||
  fail "python3-kubernetes is not installed (deploy/deps.sh installs it)"
/usr/bin/python3 "$root/tests/integration/python_client.py" "$state/config" || fail "python client"
pass "python3-kubernetes: list, create, watch until Running, delete"

# Bad input over HTTP gets kube-apiserver's answers; 2,000 idle connections leave both APIs up.
/usr/bin/python3 "$root/tests/integration/http_bad_input.py" "$state" "$mkubectl" || fail "bad input"
pass "bad input: malformed, wrong kind, wrong name, too large; 2,000 idle connections"

# Every daemon's /metrics parses as Prometheus' text format, with Kubernetes' and etcd's names,
# and /readyz answers 200 (the apiserver's with a token only).
/usr/bin/python3 "$root/tests/integration/scrape_metrics.py" "$state" || fail "metrics"
pass "every daemon's /metrics parsed by prometheus_client; /readyz 200"

echo "kubectl_test.sh: $passed checks passed"
