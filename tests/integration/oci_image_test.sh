#!/usr/bin/env bash
# A pod runs an OCI image pulled from a registry: Debian's docker-registry on loopback, an
# image the test makes from the node's static busybox (an OCI layout, pushed with skopeo), and
# a cluster whose agents speak plain HTTP to that registry. The pod runs as the image's user in
# its working folder with the image's files only; a tag the registry lacks is ErrImagePull.
# Without docker-registry or skopeo the test fails: they are in deploy/deps.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
for tool in docker-registry skopeo curl python3; do
  command -v "$tool" >/dev/null || { echo "oci_image_test.sh: $tool is not on PATH" >&2; exit 1; }
done
[ -x /bin/busybox ] || { echo "oci_image_test.sh: /bin/busybox (busybox-static) is missing" >&2; exit 1; }
state=$(mktemp -d)
registry_pid=''
cleanup() {
  "$root/deploy/down.sh" --state-dir "$state/cluster" --purge >/dev/null 2>&1 || true
  [ -z "$registry_pid" ] || kill "$registry_pid" 2>/dev/null || true
  rm -rf "$state"
}
trap cleanup EXIT
mkubectl="${MKUBE_BUILD_DIR:-$root/build}/bin/mkubectl"
ctl() { MKUBECONFIG=$state/cluster/config "$mkubectl" "$@"; }
passed=0
pass() { passed=$((passed + 1)); echo "ok $passed: $*"; }
fail() {
  echo "FAILED: $*" >&2
  ctl get pods -o wide >&2 || true
  tail -n 20 "$state"/cluster/logs/agent-node01.log >&2 || true
  exit 1
}
source "$root/tests/lib/checks.sh"

# The registry, on a free loopback port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
registry=127.0.0.1:$port
cat >"$state/registry.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $state/registry-data
http:
  addr: $registry
YAML
docker-registry serve "$state/registry.yml" >"$state/registry.log" 2>&1 &
registry_pid=$!
until_ok 20 curl -sf "http://$registry/v2/"

python3 "$root/tests/integration/oci_layout.py" "$state/layout" v1 >/dev/null
skopeo copy --quiet --dest-tls-verify=false "oci:$state/layout:v1" "docker://$registry/tools/busybox:v1" ||
  fail "skopeo could not push the image"
pass "an OCI image made from the node's busybox, pushed to docker-registry at $registry"

MKUBE_AGENT_FLAGS="--insecure-registry $registry" "$root/deploy/up.sh" --state-dir "$state/cluster" \
  --store-listen 127.0.0.1:0 --apiserver-listen 127.0.0.1:0 --apiserver-http-listen 127.0.0.1:0 \
  --agent-port 0 --address-block $((220 + $$ % 35)) --nodes 1 >"$state/up.log" 2>&1 ||
  { cat "$state/up.log" >&2; fail "up.sh"; }

ctl run oci --image="$registry/tools/busybox:v1" --restart=Never >/dev/null
until_ok 60 shows '^oci .*Completed' ctl get pod oci
[ "$(ctl logs oci)" = "ran as app in /data: from the image" ] || fail "the pod said: $(ctl logs oci)"
shows "Successfully pulled image \"$registry/tools/busybox:v1\" in [0-9.]*m\?s ([0-9.]*m\?s including waiting). Image size: [0-9]* bytes." \
  ctl describe pod oci ||
  fail "no Pulled event: $(ctl describe pod oci | tail -8)"
pass "a pod ran it as the image's user, in its working folder, with its files"

# The image alone: the node's own folders are not in it.
ctl run lonely --image="$registry/tools/busybox:v1" --restart=Never --command -- /bin/sh -c \
  'for d in /usr /lib /sbin; do test -e $d || echo "no $d"; done; test -e /etc/resolv.conf && echo resolv' \
  >/dev/null
until_ok 60 shows '^lonely .*Completed' ctl get pod lonely
out=$(ctl logs lonely)
[ "$out" = "$(printf 'no /usr\nno /lib\nno /sbin\nresolv')" ] || fail "the node's folders showed: $out"
pass "the container's root is the image's files only"

ctl run missing --image="$registry/tools/busybox:v2" --restart=Never >/dev/null
until_ok 60 shows 'ErrImagePull\|ImagePullBackOff' ctl get pod missing
shows 'MANIFEST_UNKNOWN' ctl describe pod missing || fail "the pull error: $(ctl describe pod missing | tail -8)"
pass "a tag the registry lacks is ErrImagePull with the registry's reason"
echo "all $passed checks passed"
