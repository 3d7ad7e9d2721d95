#!/usr/bin/env bash
# Pods run OCI images pulled from a registry: Debian's docker-registry on loopback, asking for
# a password (htpasswd), images the test makes from the node's static busybox (OCI layouts,
# pushed with skopeo), and a cluster whose agents speak plain HTTP to that registry and read
# its credentials from a file written while they run. Shown: the refusal without credentials
# then the pull with them; the image's user, working folder, files and nothing of the node's;
# pulls by tag, by digest and through a manifest list; a whiteout and an opaque folder across
# layers; args against the image's Entrypoint and Cmd; a corrupted layer refused then pulled
# once repaired; a tag the registry lacks; Never with an absent image; and `mkubectl image
# load` of a docker save archive run without any registry.
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
source "$root/deploy/lib/registry.sh"
# completes POD OUTPUT: the pod ran to completion and printed OUTPUT.
completes() {
  until_ok 60 shows "^$1 .*Completed" ctl get pod "$1"
  local out
  out=$(ctl logs "$1")
  [ "$out" = "$2" ] || fail "pod $1 said '$out', not '$2'"
}
# pod NAME IMAGE [POLICY [ARGS_JSON]]: a pod that runs once.
pod() {
  ctl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: $2
    imagePullPolicy: ${3:-IfNotPresent}
    args: ${4:-null}
YAML
}

# The registry, on a free loopback port, with a user and password.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
registry=127.0.0.1:$port
# bcrypt at its lowest cost: the registry checks the password on every request, and the
# default cost (12) takes a quarter of a second each.
python3 -W ignore -c 'import crypt; print("tester:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' \
  >"$state/htpasswd" 2>/dev/null || htpasswd -Bbn -C 4 tester s3cret >"$state/htpasswd" ||
  fail "cannot write a bcrypt htpasswd (python3's crypt or apache2-utils' htpasswd)"
registry_config "$state/registry.yml" "$registry" "$state/registry-data" "$state/htpasswd"
docker-registry serve "$state/registry.yml" >"$state/registry.log" 2>&1 &
registry_pid=$!
until_ok 20 curl -sf -u tester:s3cret "http://$registry/v2/"

push() {  # push LAYOUT_KIND REPOSITORY:TAG (the layout's tag is its own name, dashed)
  local name=${2//[:\/]/-}
  python3 "$root/tests/integration/oci_layout.py" "$state/layout-$name" "$name" "$1" >/dev/null
  skopeo copy --quiet --all --dest-tls-verify=false --dest-creds tester:s3cret \
    "oci:$state/layout-$name:$name" "docker://$registry/$2" || fail "skopeo could not push $2"
}
push plain tools/busybox:v1
push layers tools/layers:v1
push index tools/multi:v1
push layers tools/broken:v1
push many:32 tools/many:v1
digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' \
  "$state/layout-tools-busybox-v1/index.json")
pass "five images made from the node's busybox, pushed to docker-registry at $registry"

# The cluster has a registry of its own too (up.sh --registry), without a password.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
local_registry=127.0.0.1:$port
# Image garbage collection as on a full disk (any usage is over a 1% threshold), for images
# unused for 20 s, looked at each second.
gc_flags="--image-gc-high-threshold 1 --image-gc-low-threshold 1 --minimum-image-ttl-duration 20s --image-gc-period 1s"
MKUBE_AGENT_FLAGS="--insecure-registry $registry --registry-credentials $state/credentials.json $gc_flags" \
  "$root/deploy/up.sh" --state-dir "$state/cluster" --registry "$local_registry" \
  --store-listen 127.0.0.1:0 --apiserver-listen 127.0.0.1:0 --apiserver-http-listen 127.0.0.1:0 \
  --agent-port 0 --address-block $((220 + $$ % 35)) --nodes 1 >"$state/up.log" 2>&1 ||
  { cat "$state/up.log" >&2; fail "up.sh"; }

# Without credentials the registry refuses; written while the agent runs, they are used at the
# pull's next try (after the back-off).
pod oci "$registry/tools/busybox:v1"
until_ok 60 shows 'ErrImagePull\|ImagePullBackOff' ctl get pod oci
shows "asks for credentials, and the node has none for it" ctl describe pod oci ||
  fail "the refusal: $(ctl describe pod oci | tail -8)"
auth=$(printf 'tester:s3cret' | base64)
echo "{\"auths\": {\"http://$registry\": {\"auth\": \"$auth\"}}}" >"$state/credentials.json"
completes oci "ran as app in /data: from the image"
shows "Successfully pulled image \"$registry/tools/busybox:v1\" in [0-9.]*m\?s ([0-9.]*m\?s including waiting). Image size: [0-9]* bytes." \
  ctl describe pod oci ||
  fail "no Pulled event: $(ctl describe pod oci | tail -8)"
pass "refused without credentials, then pulled with the node's; run as the image's user, in its working folder"

# The image alone: the node's own folders are not in it.
ctl run lonely --image="$registry/tools/busybox:v1" --restart=Never --command -- /bin/sh -c \
  'for d in /usr /lib /sbin; do test -e $d || echo "no $d"; done; test -e /etc/resolv.conf && echo resolv' \
  >/dev/null
completes lonely "$(printf 'no /usr\nno /lib\nno /sbin\nresolv')"
pass "the container's root is the image's files only (command replaces the Entrypoint)"

pod bydigest "$registry/tools/busybox@$digest" Always
completes bydigest "ran as app in /data: from the image"
[ "$(ctl get pod oci -o jsonpath='{.status.containerStatuses[0].imageID}')" = "$registry/tools/busybox@$digest" ] ||
  fail "the imageID: $(ctl get pod oci -o jsonpath='{.status.containerStatuses[0].imageID}')"
pass "pulled by digest ($digest); containers' imageID is the repository digest"

pod layers "$registry/tools/layers:v1" IfNotPresent '["echo $(ls /data) $(ls /etc/old.d)"]'
completes layers "new b"
pass "a whiteout and an opaque folder in the upper layer hide the lower's files (args replace Cmd)"
# Where overlayfs stacks them, the container's root is the layers' own folders: each unpacked
# once by its digest, and no tree of the whole image made.
if shows "images' layers stacked" ctl get node node01 -o jsonpath='{.metadata.annotations}'; then
  store=$state/cluster/nodes/node01/oci
  for layer in $(python3 -c '
import json, sys
d = sys.argv[1]
top = json.load(open(d + "/index.json"))["manifests"][0]["digest"][7:]
print(" ".join(l["digest"][7:] for l in json.load(open(d + "/blobs/sha256/" + top))["layers"]))' \
    "$state/layout-tools-layers-v1"); do
    [ -d "$store/layers/sha256/$layer" ] || fail "layer $layer is not unpacked on its own"
  done
  [ -z "$(ls -A "$store/roots" 2>/dev/null)" ] || fail "a whole tree was made: $(ls "$store/roots")"
  pass "the root stacks the image's layers, each unpacked once by digest"
  # More layers than one page of mount options names whole.
  pod many "$registry/tools/many:v1" IfNotPresent '["cat /data/motd /data/l000 /data/l031"]'
  completes many "from the image
layer 0
layer 31"
  pass "an image of 33 layers runs from them stacked"
else
  echo "skip: this node has no overlayfs; images are applied into one folder"
fi

pod multi "$registry/tools/multi:v1"
completes multi "ran as app in /data: from the image"
pass "a manifest list: the linux/amd64 image of two"

# What an image says of itself, asked of the node that holds it: image inspect, and describe's
# Image Ports beside the container's own.
inspected=$(ctl image inspect "$registry/tools/multi:v1") || fail "image inspect: $inspected"
for line in "Node: *node01" "Platform: *linux/amd64" "User: *app" "WorkingDir: */data" \
  "Entrypoint: */bin/sh -c"; do
  grep -q "^$line" <<<"$inspected" || fail "image inspect lacks '$line': $inspected"
done
ctl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: exposed}
spec:
  containers: [{name: c, image: nginx}]
YAML
until_ok 60 shows "^exposed .*Running" ctl get pod exposed
shows "Image Ports: *80/TCP" ctl describe pod exposed || fail "describe: $(ctl describe pod exposed)"
shows "^Exposed Ports: *80/tcp" ctl image inspect nginx || fail "$(ctl image inspect nginx)"
if out=$(ctl image inspect nosuch:v1 2>&1); then fail "image inspect of an absent image: $out"; fi
grep -q 'no node holds image "nosuch:v1"' <<<"$out" || fail "image inspect said: $out"
ctl delete pod exposed --grace-period=0 >/dev/null
pass "image inspect shows an image's config as its node holds it; describe its exposed ports"

# A layer the registry serves corrupted (same size, other bytes) is refused by its digest; the
# pull's next try, once the registry has it right, succeeds.
upper=$(python3 -c '
import json, sys
d = sys.argv[1]
top = json.load(open(d + "/index.json"))["manifests"][0]["digest"][7:]
print(json.load(open(d + "/blobs/sha256/" + top))["layers"][1]["digest"][7:])' \
  "$state/layout-tools-broken-v1")
blob="$state/registry-data/docker/registry/v2/blobs/sha256/${upper:0:2}/$upper/data"
[ -f "$blob" ] || fail "no blob $blob in the registry's storage"
cp "$blob" "$state/good-layer"
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2] ^= 0xff; open(p,"wb").write(b)' "$blob"
pod broken "$registry/tools/broken:v1" IfNotPresent '["echo $(ls /data) $(ls /etc/old.d)"]'
until_ok 60 shows 'ErrImagePull\|ImagePullBackOff' ctl get pod broken
shows "is corrupt: its content hashes to sha256:" ctl describe pod broken ||
  fail "the refusal: $(ctl describe pod broken | tail -8)"
cp "$state/good-layer" "$blob"
completes broken "new b"
pass "a corrupted layer refused by its digest, then pulled once the registry had it right"

pod missing "$registry/tools/busybox:v2"
until_ok 60 shows 'ErrImagePull\|ImagePullBackOff' ctl get pod missing
shows 'MANIFEST_UNKNOWN' ctl describe pod missing || fail "the pull error: $(ctl describe pod missing | tail -8)"
pass "a tag the registry lacks is ErrImagePull with the registry's reason"

pod never "$registry/tools/absent:v1" Never
until_ok 60 shows '^never .*ErrImageNeverPull' ctl get pod never
pass "Never with an image the node lacks is ErrImageNeverPull"

# The registry up.sh started: pushed to without credentials, pulled from over plain HTTP.
grep -q "registry: http://$local_registry (plain HTTP" "$state/up.log" || fail "up.sh did not say where its registry is"
skopeo copy --quiet --dest-tls-verify=false "oci:$state/layout-tools-busybox-v1:tools-busybox-v1" \
  "docker://$local_registry/mine/app:v1" || fail "skopeo could not push to up.sh's registry"
pod mine "$local_registry/mine/app:v1"
completes mine "ran as app in /data: from the image"
pass "up.sh --registry $local_registry: pushed to with skopeo, run from"

# A docker save archive loaded into the node, run with no registry involved.
skopeo copy --quiet "oci:$state/layout-tools-busybox-v1:tools-busybox-v1" "docker-archive:$state/saved.tar:team/app:v7" ||
  fail "skopeo could not write a docker save archive"
shows '^Image: "team/app:v7" with ID "sha256:[0-9a-f]\{64\}" loaded into node "node01" (2MB)$' \
  ctl image load "$state/saved.tar" --nodes node01 || fail "image load"
pod loaded team/app:v7 Never
completes loaded "ran as app in /data: from the image"
until_ok 20 shows '^node01 *team/app:v7 *2MB$' ctl image ls --nodes node01 --no-headers
pass "mkubectl image load of a docker save archive; the pod runs it with Never; image ls lists it"
# Garbage collection: every image stays while a pod names it; once the manifest list's pod is
# gone, its image is removed (and the disk being "full" still, the kubelet's warning is said).
ctl image ls --nodes node01 --no-headers >"$state/before-gc"
grep -q "tools/multi:v1" "$state/before-gc" || fail "tools/multi:v1 was not on the node: $(cat "$state/before-gc")"
ctl delete pod multi >/dev/null
until_ok 60 bash -c "! MKUBECONFIG=$state/cluster/config $mkubectl image ls --nodes node01 | grep -q tools/multi:v1"
for image in tools/busybox:v1 tools/layers:v1 tools/broken:v1 mine/app:v1 team/app:v7; do
  shows "$image" ctl image ls --nodes node01 || fail "$image was removed while a pod names it"
done
shows "removed image $registry/tools/multi:v1 (sha256:[0-9a-f]*; [0-9]* bytes freed): disk usage" \
  cat "$state/cluster/logs/agent-node01.log" || fail "the agent did not log the removal"
until_ok 30 shows "FreeDiskSpaceFailed.*Failed to garbage collect required amount of images" \
  ctl get events --field-selector involvedObject.kind=Node
pass "an image no pod names removed by the image garbage collector; those in use kept"
echo "all $passed checks passed"
