#!/usr/bin/env bash
# The seeds' walkthrough on a cluster started as up.sh starts it, with mkubectl, checking what
# the seeds say the reader will see: the list-watch creation flow, nodeName pinning,
# nodeSelector and labels, spreading, NoExecute taints, cordon, drain, the pod phases, node
# and pod (anti-)affinity, taints and tolerations, and the troubleshooting commands.
set -euo pipefail
trap 'echo "walkthrough_test.sh: failed at line $LINENO" >&2' ERR
root=$(cd "$(dirname "$0")/../.." && pwd)
state=$(mktemp -d)
# Addresses apart from a cluster the user may be running (block 1) and from the C++ tests'
# clusters (20-219).
block=$((220 + $$ % 35))
trap '"$root/deploy/down.sh" --state-dir "$state" --purge >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
# Nodes are taken as lost after 10 s without a Lease renewal (Kubernetes: 50 s), so that the
# Unknown phase shows within the test.
export MKUBE_CONTROLLER_MANAGER_FLAGS="--node-monitor-grace-period 10s --node-monitor-period 1s"
export MKUBE_AGENT_FLAGS="--node-lease-duration-seconds 8"
# Quiet unless it fails (a failed build prints on stdout).
up() {
  local out
  out=$("$root/deploy/up.sh" --state-dir "$state" --store-listen 127.0.0.1:0 \
    --apiserver-listen 127.0.0.1:0 --apiserver-http-listen 127.0.0.1:0 --agent-port 0 --address-block "$block" 2>&1) ||
    { echo "$out" >&2; echo "walkthrough_test.sh: up.sh failed" >&2; return 1; }
}
up
mkubectl="${MKUBE_BUILD_DIR:-$root/build}/bin/mkubectl"
examples=$root/deploy/examples
ctl() { MKUBECONFIG=$state/config "$mkubectl" "$@"; }
section() { echo "== $*"; }
fail() { echo "FAILED: $*" >&2; ctl get pods -o wide >&2 || true; exit 1; }
source "$root/tests/lib/checks.sh"
# The nodes of the Running pods with label $1, sorted, one per line.
nodes_of() {
  ctl get pods -l "$1" -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.spec.nodeName}{"\n"}{end}' |
    sort
}
running_count() { [ "$(nodes_of "$1" | grep -c .)" = "$2" ]; }
# pods_are N SELECTOR: N pods (in any phase) have labels matching SELECTOR.
pods_are() {
  local out
  out=$(ctl get pods -l "$2" --no-headers) || return 1
  [ "$(grep -c . <<<"$out")" = "$1" ]
}
# gone POD...: every one of the pods is gone (not found), not merely one of them.
gone() {
  local pod out
  for pod in "$@"; do
    if out=$(ctl get pod "$pod" 2>&1); then return 1; fi
    [[ $out == *"(NotFound)"* ]] || return 1
  done
}
all_on() { [ "$(nodes_of "$1" | sort -u | tr '\n' ' ')" = "$2 " ]; }
# The reasons of an object's events, in the order they were written.
reasons_of() {
  ctl get events --field-selector "involvedObject.name=$1" \
    -o jsonpath='{range .items[*]}{.metadata.resourceVersion} {.reason}{"\n"}{end}' |
    sort -n | awk '{print $2}' | tr '\n' ' '
}
# has_event OBJECT REASON: an event of OBJECT has REASON (read anew at each call).
has_event() { [[ " $(reasons_of "$1")" == *" $2 "* ]]; }

section "1.2 List-Watch: a pod is scheduled, its image pulled, its container created and started"
says 'pod/web created' ctl run web --image=soscscs/myapp:v1
ctl wait --for=condition=Ready pod/web --timeout=60s >/dev/null
until_ok 10 has_event web Started
reasons=$(reasons_of web)
[[ " $reasons" == *" Scheduled "* ]] || fail "no Scheduled event: $reasons"
agent=$(echo $(echo "$reasons" | tr ' ' '\n' | grep -v '^Scheduled$'))
[ "$agent" = "Pulling Pulled Created Started" ] || fail "the agent's events: $agent"
# The scheduler and the agent post their events independently, and the scheduler stamps
# Scheduled just after the binding returns, when the agent may already be pulling: Scheduled
# is at most a second (the stamps' resolution) after Pulling, whichever was written first.
stamps=$(ctl get events --field-selector involvedObject.name=web \
  -o jsonpath='{range .items[*]}{.reason} {.firstTimestamp}{"\n"}{end}')
scheduled_at=$(echo "$stamps" | awk '$1 == "Scheduled" {print $2}')
pulling_at=$(echo "$stamps" | awk '$1 == "Pulling" {print $2}')
[ "$(date -d "$scheduled_at" +%s)" -le "$(( $(date -d "$pulling_at" +%s) + 1 ))" ] ||
  fail "Scheduled ($scheduled_at) long after Pulling ($pulling_at)"

section "4.1.1 nodeName: every replica on node02, without the scheduler"
says 'deployment.apps/myapp created' ctl apply -f "$examples/myapp.yaml"
until_ok 60 pods_are 3 app=myapp
[ "$(ctl get pods -l app=myapp -o jsonpath='{.items[*].spec.nodeName}')" = "node02 node02 node02" ] ||
  fail "nodeName pods not all on node02"
pod=$(ctl get pods -l app=myapp -o jsonpath='{.items[0].metadata.name}')
until_ok 30 shows . ctl get events --field-selector "involvedObject.name=$pod" -o name
[[ " $(reasons_of "$pod")" != *" Scheduled "* ]] || fail "a nodeName pod went through the scheduler"
ctl delete deployment myapp >/dev/null

section "4.2 nodeSelector: label, --overwrite, label key-, get -l, --show-labels"
says 'node/node01 labeled' ctl label nodes node01 kgc=a
shows '^node01 .*kgc=a' ctl get nodes --show-labels
[ "$(ctl get nodes -l kgc=a -o name)" = node/node01 ] || fail "get -l kgc=a"
ctl apply -f "$examples/myapp1.yaml" >/dev/null
until_ok 60 running_count app=myapp1 3
all_on app=myapp1 node01 || fail "nodeSelector kgc=a pods not all on node01"
if out=$(ctl label nodes node01 kgc=b 2>&1); then fail "relabel without --overwrite succeeded"; fi
[ "$out" = "error: 'kgc' already has a value (a), and --overwrite is false" ] || fail "message: $out"
says 'node/node01 labeled' ctl label nodes node01 kgc=b --overwrite
says 'node/node01 unlabeled' ctl label nodes node01 kgc-
[ -z "$(ctl get nodes -l kgc -o name)" ] || fail "kgc- left the label"
running_count app=myapp1 3 || fail "pods stopped when the label went (IgnoredDuringExecution)"
ctl delete deployment myapp1 >/dev/null

section "4.3 Two equally labelled nodes share the replicas"
ctl label nodes node01 node02 cht=a >/dev/null
ctl apply -f "$examples/myapp1-cht.yaml" >/dev/null
until_ok 60 running_count app=myapp1 3
[ "$(nodes_of app=myapp1 | sort -u | tr '\n' ' ')" = "node01 node02 " ] || fail "not spread"

section "6.2 A NoExecute taint evicts, and the Deployment recreates the pods elsewhere"
says 'node/node01 tainted' ctl taint node node01 cht=mycht:NoExecute
until_ok 60 all_on app=myapp1 node02
until_ok 60 running_count app=myapp1 3
says 'node/node01 untainted' ctl taint node node01 cht=mycht:NoExecute-

section "7 cordon / uncordon: Ready,SchedulingDisabled"
says 'node/node02 cordoned' ctl cordon node02
shows '^node02 *Ready,SchedulingDisabled ' ctl get nodes
says 'node/node02 uncordoned' ctl uncordon node02
shows '^node02 *Ready ' ctl get nodes

section "7 drain: the pods come back on the other node; uncordon after"
# A pod no controller recreates stops a drain without --force (the node stays cordoned).
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: pinned}\nspec:\n  nodeName: node02\n  containers: [{name: c, image: soscscs/myapp:v1}]\n' |
  ctl apply -f - >/dev/null
if ctl drain node02 >/dev/null 2>"$state/drain.err"; then fail "drain passed a bare pod"; fi
grep -q '^cannot delete Pods declare no controller (use --force to override): .*default/pinned' \
  "$state/drain.err" || fail "drain without --force: $(cat "$state/drain.err")"
shows '^node02 *Ready,SchedulingDisabled ' ctl get nodes
ctl drain node02 --ignore-daemonsets --delete-emptydir-data --force --timeout=90s >/dev/null 2>&1
shows '^node02 *Ready,SchedulingDisabled ' ctl get nodes
until_ok 60 running_count app=myapp1 3
all_on app=myapp1 node01 || fail "drained pods not on node01"
ctl uncordon node02 >/dev/null
ctl delete deployment myapp1 >/dev/null

section "8 Pod phases: Succeeded, Failed, Pending, Running"
ctl create job done --image=busybox -- sh -c 'exit 0' >/dev/null
ctl wait --for=condition=Complete job/done --timeout=60s >/dev/null
[ "$(ctl get pods -l job-name=done -o jsonpath='{.items[0].status.phase}')" = Succeeded ]
ctl run bad --image=busybox --restart=Never -- sh -c 'exit 1' >/dev/null
ctl wait --for=jsonpath='{.status.phase}'=Failed pod/bad --timeout=60s >/dev/null
shows ' Error ' ctl get pod bad --no-headers
ctl apply -f - >/dev/null <<'POD'
apiVersion: v1
kind: Pod
metadata: {name: nowhere}
spec:
  nodeSelector: {disktype: none-has-it}
  containers: [{name: c, image: busybox}]
POD
until_ok 30 shows 'FailedScheduling' ctl get events --field-selector involvedObject.name=nowhere
[ "$(ctl get pod nowhere -o jsonpath='{.status.phase}')" = Pending ]
ctl run alive --image=soscscs/myapp:v1 >/dev/null
ctl wait --for=condition=Ready pod/alive --timeout=60s >/dev/null
[ "$(ctl get pod alive -o jsonpath='{.status.phase}')" = Running ]

section "5.1.3 Required node affinity (NotIn node02); 5.1.4 preferred; 5.1.5 both"
ctl delete pod --all --grace-period=0 --force >/dev/null 2>&1
node_of() { ctl get pod "$1" -o jsonpath='{.spec.nodeName}'; }
ctl apply -f "$examples/pod1.yaml" >/dev/null
ctl wait --for=condition=Ready pod/nginx001 --timeout=60s >/dev/null
[ "$(node_of nginx001)" = node01 ] || fail "NotIn node02 put nginx001 on $(node_of nginx001)"
ctl apply -f "$examples/pod2.yaml" >/dev/null   # prefers node03, which does not exist
ctl wait --for=condition=Ready pod/affinity --timeout=60s >/dev/null
ctl delete pod affinity --grace-period=0 --force >/dev/null 2>&1
sed 's/- node03/- node02/' "$examples/pod2.yaml" | ctl apply -f - >/dev/null
ctl wait --for=condition=Ready pod/affinity --timeout=60s >/dev/null
[ "$(node_of affinity)" = node02 ] || fail "preferring node02 put the pod on $(node_of affinity)"
ctl delete pod affinity --grace-period=0 --force >/dev/null 2>&1
ctl label nodes node01 blue=a >/dev/null
ctl apply -f "$examples/pod3.yaml" >/dev/null
ctl wait --for=condition=Ready pod/affinity --timeout=60s >/dev/null
[ "$(node_of affinity)" = node01 ] || fail "NotIn node02, preferring blue=a: $(node_of affinity)"
ctl delete pod affinity nginx001 --grace-period=0 --force >/dev/null 2>&1

section "5.2 Pod affinity; anti-affinity preferred; required anti-affinity Pending until relabelled"
ctl label nodes node01 node02 cht=a --overwrite >/dev/null
ctl apply -f "$examples/pod8.yaml" >/dev/null     # myapp01, app=myapp01, not on node02
ctl wait --for=condition=Ready pod/myapp01 --timeout=60s >/dev/null
ctl apply -f "$examples/pod5.yaml" >/dev/null     # with app=myapp01 in its cht domain
ctl wait --for=condition=Ready pod/myapp02 --timeout=60s >/dev/null
[[ "$(node_of myapp02)" == node0[12] ]] || fail "pod affinity: $(node_of myapp02)"
ctl apply -f "$examples/pod-anti-affinity-preferred.yaml" >/dev/null
ctl wait --for=condition=Ready pod/myapp10 --timeout=60s >/dev/null
[ "$(node_of myapp10)" = node02 ] || fail "preferred anti-affinity: $(node_of myapp10)"
ctl apply -f "$examples/pod-anti-affinity-required.yaml" >/dev/null
until_ok 30 shows 'FailedScheduling' ctl get events --field-selector involvedObject.name=myapp20
[ "$(ctl get pod myapp20 -o jsonpath='{.status.phase}')" = Pending ]
ctl label nodes node02 cht=b --overwrite >/dev/null   # node02 leaves myapp01's domain
ctl wait --for=condition=Ready pod/myapp20 --timeout=60s >/dev/null
[ "$(node_of myapp20)" = node02 ] || fail "myapp20 after relabelling: $(node_of myapp20)"
ctl delete pod myapp02 myapp10 myapp20 --grace-period=0 --force >/dev/null 2>&1

section "6.1 The master's NoSchedule taint; NoSchedule on node01; 6.2 tolerations"
shows '^Taints: *node-role.kubernetes.io/master:NoSchedule' ctl describe node master01
ctl taint node node01 key1=value1:NoSchedule >/dev/null
shows '^Taints: *key1=value1:NoSchedule' ctl describe node node01
ctl run tainted --image=soscscs/myapp:v1 >/dev/null
ctl wait --for=condition=Ready pod/tainted --timeout=60s >/dev/null
[ "$(node_of tainted)" = node02 ] || fail "a NoSchedule taint let tainted onto $(node_of tainted)"
says 'node/node01 untainted' ctl taint node node01 key1:NoSchedule-
# demo01's myapp01 tolerates cht=mycht:NoExecute for 3600 s: with both nodes tainted it
# stays where it runs, while the pods without the toleration are evicted.
ctl delete pod myapp01 --grace-period=0 --force >/dev/null 2>&1
ctl apply -f "$examples/demo01.yaml" >/dev/null
ctl wait --for=condition=Ready pod/myapp01 --timeout=60s >/dev/null
host=$(node_of myapp01)
ctl run plain --image=soscscs/myapp:v1 >/dev/null
ctl taint node node01 node02 cht=mycht:NoExecute >/dev/null
until_ok 60 gone tainted plain
[ "$(node_of myapp01)" = "$host" ] || fail "the tolerating pod moved"
[ "$(ctl get pod myapp01 -o jsonpath='{.status.phase}')" = Running ]
ctl apply -f "$examples/tolerate-all.yaml" >/dev/null   # tolerates every taint (Exists)
ctl wait --for=condition=Ready pod/tolerate-all --timeout=60s >/dev/null
ctl taint node node01 node02 cht=mycht:NoExecute- >/dev/null

section "6.2.3 PreferNoSchedule on the master: used only when the nodes cannot take a pod"
ctl taint node node01 node02 full=yes:NoSchedule >/dev/null
ctl taint node master01 node-role.kubernetes.io/master:NoSchedule- >/dev/null
ctl taint node master01 node-role.kubernetes.io/master=:PreferNoSchedule >/dev/null
shows '^Taints: *node-role.kubernetes.io/master:PreferNoSchedule' ctl describe node master01
ctl run overflow --image=soscscs/myapp:v1 >/dev/null
ctl wait --for=condition=Ready pod/overflow --timeout=60s >/dev/null
[ "$(node_of overflow)" = master01 ] || fail "PreferNoSchedule: overflow on $(node_of overflow)"
ctl delete pod overflow --grace-period=0 --force >/dev/null 2>&1
ctl taint node master01 node-role.kubernetes.io/master:PreferNoSchedule- >/dev/null
ctl taint node master01 node-role.kubernetes.io/master=:NoSchedule >/dev/null
ctl taint node node01 node02 full:NoSchedule- >/dev/null

section "8.3 describe, logs, exec, cluster-info"
shows '^Status: *Running' ctl describe pod myapp01
shows 'cht=mycht:NoExecute for 3600s' ctl describe pod myapp01
says myapp01 ctl exec myapp01 -- sh -c 'echo $HOSTNAME'
ctl logs myapp01 >/dev/null
shows 'is running at' ctl cluster-info
until_ok 30 shows '^node01 *[0-9]*m *[0-9]*% *[0-9]*Mi *[0-9]*%' ctl top nodes
until_ok 30 shows '^myapp01 *[0-9]*m *[0-9]*Mi' ctl top pod myapp01 --no-headers
section "8.2 Unknown: the agent of a pod's node stops; up.sh starts it again"
node=$(node_of myapp01)
# Its supervisor too: otherwise the agent is back within a second and the node never goes
# NotReady.
kill -9 "$(cat "$state/run/supervisors/agent-$node.pid")" "$(cat "$state/run/agent-$node.pid")"
until_ok 30 shows "^$node *NotReady " ctl get nodes
until_ok 30 shows ' Unknown ' ctl get pod myapp01 --no-headers
up
shows "^$node *Ready " ctl get nodes
until_ok 30 shows ' Running ' ctl get pod myapp01 --no-headers

section "6.2.3 A key without an effect tolerates every effect of it; tolerationSeconds runs out"
ctl taint node node01 key=a:NoSchedule >/dev/null
ctl taint node node02 key=b:NoExecute >/dev/null
ctl apply -f "$examples/tolerate-key.yaml" >/dev/null
ctl wait --for=condition=Ready pod/tolerate-key --timeout=60s >/dev/null
ctl run untolerated --image=soscscs/myapp:v1 >/dev/null
until_ok 30 shows 'FailedScheduling' ctl get events --field-selector involvedObject.name=untolerated
# Tolerated for 3 s only: evicted by the taint once they have passed.
printf '%s\n' 'apiVersion: v1' 'kind: Pod' 'metadata: {name: brief}' 'spec:' \
  '  nodeSelector: {kubernetes.io/hostname: node02}' \
  '  containers: [{name: c, image: soscscs/myapp:v1}]' \
  '  tolerations: [{key: key, operator: Equal, value: b, effect: NoExecute, tolerationSeconds: 3}]' |
  ctl apply -f - >/dev/null
until_ok 60 gone brief
shows TaintManagerEviction ctl get events --field-selector involvedObject.name=brief
[ "$(ctl get pod tolerate-key -o jsonpath='{.status.phase}')" = Running ]
ctl taint node node01 key:NoSchedule- >/dev/null
ctl taint node node02 key:NoExecute- >/dev/null
ctl wait --for=condition=Ready pod/untolerated --timeout=60s >/dev/null
echo "walkthrough passed"
